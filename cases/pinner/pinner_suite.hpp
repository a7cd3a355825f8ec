// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "suite.hpp"

namespace pinmatrix {

// Every long-term pinner that runs here (cases/pinner/pinner_cases.hpp):
// udmabuf, an on-demand-paging MR, vhost-vdpa, VFIO type1, iommufd's mock
// domain and the CMA heap on a page of restricted memory, judged by kernel
// version; each SKIPs with what is missing where the kernel lacks it. Pages are read through the test module, or under
// --no-module through pagemap.
std::unique_ptr<suite> make_pinner_suite(const suite_options &opt);
} // namespace pinmatrix
