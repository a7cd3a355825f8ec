// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <memory>

#include "suite.hpp"

namespace pinmatrix {

// Every long-term pinner that runs here (cases/pinner/pinner_cases.hpp):
// udmabuf and an on-demand-paging MR on a page of restricted memory, judged
// by kernel version; iommufd's mock domain, the vDPA simulator and VFIO
// type1 SKIP with what is missing. Pages are read through the test module,
// or under --no-module through pagemap.
std::unique_ptr<suite> make_pinner_suite(const suite_options &opt);

} // namespace pinmatrix
