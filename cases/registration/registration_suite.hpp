// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <memory>

#include "suite.hpp"

namespace pinmatrix {

// Registrations that fail for reasons other than placement, so that the
// telemetry's classification is checked against a known cause: an
// exhausted memlock limit without CAP_IPC_LOCK (ENOMEM, "memlock quota",
// not placement) and a zero one (EPERM). Needs an RDMA device; the test
// module only sharpens the evidence (the page's placement, its pins).
std::unique_ptr<suite> make_registration_suite(const suite_options &opt);

} // namespace pinmatrix
