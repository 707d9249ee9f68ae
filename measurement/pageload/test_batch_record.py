"""batch_record and the report's "What each batch ran": a recorded batch shows its commit,
tree and each daemon mode's native path and config; a batch with no record shows the tip of
main at its start, marked as inferred, and the native path the default had then. No root."""
import os
import tempfile
import unittest

from measurement.pageload import batch_record


def row(experiment, profile, rate, mode, started):
    return {"experiment": experiment, "profile": profile, "channel_rate_mbit": rate,
            "mode": mode, "ok": "1", "started_unix": str(started)}


class BatchRecord(unittest.TestCase):
    def test_modes_name_each_daemon_variant_with_its_config(self):
        variants = [("native", "native", ""), ("QUICstep", "QUICstep", ""),
                    ("QUICstep hold 100ms", "QUICstep", "[hold]\ntime_ms = 100\n")]
        text = batch_record.describe_modes(variants, {"QUICstep": "routed",
                                                      "QUICstep hold 100ms": "routed"})
        self.assertEqual(text, "QUICstep: native_path routed, config default; "
                               "QUICstep hold 100ms: native_path routed, config default + "
                               "`[hold] time_ms = 100`")

    def test_a_mode_that_writes_config_itself_says_so(self):
        variants = [("QUICstep permissive", "QUICstep permissive", "")]
        text = batch_record.describe_modes(variants, {"QUICstep permissive": "queue"})
        self.assertEqual(text, "QUICstep permissive: native_path queue, config default + "
                               '`addressing = "permissive"`')

    def test_source_state_names_a_commit(self):
        commit, tree = batch_record.source_state()
        self.assertRegex(commit, r"^([0-9a-f]{12}|unknown)$")
        self.assertTrue(tree == "clean" or tree.startswith("changed: "), tree)

    def test_report_shows_recorded_and_inferred_batches(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "batches.csv")
            batch_record.append(path, {"experiment": "table5", "profile": "london-ohio",
                                       "channel_rate_mbit": "5", "commit": "0123456789ab",
                                       "tree": "clean",
                                       "modes": "QUICstep: native_path routed, config default"})
            rows = [row("table5", "london-ohio", "5", "QUICstep", 1796300000),
                    row("paths", "london-ohio", "5", "QUICstep", 1796000000)]
            md = "\n".join(batch_record.section(rows, path, {"5": "5 Mbit/s"}))
        recorded = next(line for line in md.splitlines() if line.startswith("| table5"))
        self.assertIn("0123456789ab | clean | QUICstep: native_path routed", recorded)
        inferred = next(line for line in md.splitlines() if line.startswith("| paths"))
        self.assertIn("not recorded: the tip of main then", inferred)
        # Before the default became the routed path (f92aaa6), a batch ran the queue path.
        self.assertIn("native path by date: queue", inferred)


if __name__ == "__main__":
    unittest.main()
