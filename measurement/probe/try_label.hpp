// The label of one migration test, and the majority over its tries.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace quicstep::measurement::probe {

enum class Label {
  pass,                    // the second response arrived, all of it on the new path
  refused,                 // the server sent disable_active_migration (test not attempted)
  no_spare_cid,            // the server gave no spare connection ID to migrate with
  path_validation_failed,  // PATH_CHALLENGE on the new path got no PATH_RESPONSE in time
  timeout_after_switch,    // nothing came back after the switch (server ignores the path)
  response_on_old_path,    // answers still went to the old address/port: never support
  connection_closed,       // the connection failed before the test could conclude
  handshake_failed,        // this try's handshake failed
  not_run,                 // not attempted (no QUIC, or no second local address)
};

std::string_view to_string(Label label);

// The tries of one test. Each try adds a label; decided() once one label has a strict
// majority of `tries` (or every try ran). A tie never favours pass.
class TryTally {
 public:
  explicit TryTally(std::size_t tries) : tries_(tries == 0 ? 1 : tries) {}

  void add(Label label) { labels_.push_back(label); }
  // A label decided without tries (refused, not_run).
  void set_untried(Label label) { untried_ = label; has_untried_ = true; }
  bool decided() const;
  Label label() const;  // the majority so far; not_run with no tries
  const std::vector<Label>& tries() const { return labels_; }

 private:
  std::size_t count(Label label) const;
  std::size_t tries_;
  std::vector<Label> labels_;
  Label untried_ = Label::not_run;
  bool has_untried_ = false;
};

}  // namespace quicstep::measurement::probe
