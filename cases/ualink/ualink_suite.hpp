// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <memory>

#include "suite.hpp"

namespace pinmatrix {

// The UALink export/import/revoke conformance cases (cases/ualink/) as a
// suite: amdgpu render nodes whose kernel carries the UALink series, or the
// reference model ualink_sim (a test double for amdgpu).
std::unique_ptr<suite> make_ualink_suite(const suite_options &opt);

} // namespace pinmatrix
