// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <memory>

#include "suite.hpp"

namespace pinmatrix {

// Every backing of a registration (cases/backing/backing_cases.hpp). Its
// pages are read through the test module, or under --no-module through
// pagemap.
std::unique_ptr<suite> make_backing_suite(const suite_options &opt);

// Whether the plan has a case whose memory is a file on a disk filesystem:
// a guest then mounts one for it (vm/guest/job.sh, PINMATRIX_DISK_DIR),
// which costs a boot about 2 s under TCG.
bool plan_needs_disk_dir(const std::vector<plan_entry> &plan);

} // namespace pinmatrix
