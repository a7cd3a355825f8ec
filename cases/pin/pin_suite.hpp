// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <memory>

#include "suite.hpp"

namespace pinmatrix {

// The pin causal matrix (cases/pin/plan.cpp) as a suite: needs /dev/pinmatrix
// and an RDMA device.
std::unique_ptr<suite> make_pin_suite(const suite_options &opt);

} // namespace pinmatrix
