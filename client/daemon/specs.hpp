// derive_specs: the values the kernel half needs (the nft table's RulesetSpec, policy
// routing's RoutingSpec), derived from the config. Pure; unit-tested through nft_rules and
// print_ruleset. Failure: the first cross-key problem (routed with other UDP or other
// protocols on the channel, the same queue twice, what check_spec refuses).
#pragma once

#include <string>

#include "client/core/policy_config.hpp"
#include "client/kernel/nft_rules.hpp"
#include "client/kernel/routing.hpp"
#include "common/error.hpp"

namespace quicstep::client::daemon {

common::Outcome derive_specs(const core::Config& config, kernel::RulesetSpec* rules,
                             kernel::RoutingSpec* routing);

}  // namespace quicstep::client::daemon
