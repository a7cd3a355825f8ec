// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <memory>

#include "suite.hpp"

namespace pinmatrix {

// Long-term pins racing on one buffer of restricted memory
// (cases/race/race_cases.hpp). Its pages are read through the test module,
// or under --no-module through pagemap.
std::unique_ptr<suite> make_race_suite(const suite_options &opt);

} // namespace pinmatrix
