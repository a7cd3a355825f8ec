// SPDX-License-Identifier: GPL-2.0
#pragma once

// `pinmatrix vm`: boots a kernel in QEMU (TCG: a stock guest hangs under
// this host's KVM) with the host root shared read-only over 9p, runs the
// matrix inside it and turns whatever happened into results.json. A guest
// panic, a hang (bounded by a timeout) or a missing result is an ERROR
// verdict for each case without a result, with the serial log kept.

#include <filesystem>
#include <string>
#include <vector>

namespace pinmatrix {

struct vm_options {
	std::string kernel = "debian:" PINMATRIX_DEFAULT_KERNEL;
	// ZONE_MOVABLE stands in for CMA on a stock kernel (no CONFIG_CMA).
	std::string append = "movablecore=512M";
	unsigned memory_mib = 1024;
	int timeout_s = 300;
	std::filesystem::path out;
	std::filesystem::path cache = "/var/cache/pinmatrix";
	std::filesystem::path module = PINMATRIX_MODULE_PATH;
	std::vector<std::string> cases;
	std::string guest_cmd;
	std::string fault;	// passed to `pinmatrix run --fault` in the guest
	int case_timeout_s = 60;
};

// Returns the exit code (see cli/pinmatrix.cpp). Throws usage_error for bad
// options before anything is written.
int run_vm(const vm_options &opt);

} // namespace pinmatrix
