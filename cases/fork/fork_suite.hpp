// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <memory>

#include "suite.hpp"

namespace pinmatrix {

// Fork with a registered page (cases/fork/fork_cases.hpp), through the
// run's --second-pin (ibv_reg_mr needs an RDMA device; io_uring none). No
// test module.
std::unique_ptr<suite> make_fork_suite(const suite_options &opt);

} // namespace pinmatrix
