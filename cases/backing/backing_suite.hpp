// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <memory>

#include "suite.hpp"

namespace pinmatrix {

// Every backing of a registration (cases/backing/backing_cases.hpp). Its
// pages are read through the test module, or under --no-module through
// pagemap.
std::unique_ptr<suite> make_backing_suite(const suite_options &opt);

} // namespace pinmatrix
