// SPDX-License-Identifier: GPL-2.0
#pragma once

// `pinmatrix vm`: boots a kernel in QEMU (TCG: a stock guest hangs under
// this host's KVM) with the host root shared read-only (9p, or virtiofs), runs the
// matrix inside it and turns whatever happened into results.json. A guest
// panic, a hang (bounded by a timeout) or a missing result is an ERROR
// verdict for each case without a result, with the serial log kept.
// With --matrix, one guest boots per (kernel, boot) of the file and
// all their cases merge into one results.json.

#include <filesystem>
#include <string>
#include <vector>

#include "guest_run_options.hpp"

namespace pinmatrix {

struct vm_options {
	std::string kernel = "debian";	// see vm/kernels.hpp
	std::vector<std::filesystem::path> patches;	// for a build kernel
	std::string boot = "movable";	// --boot: a boot placement (matrix/boot.hpp)
	std::filesystem::path out;
	std::filesystem::path matrix;	// a matrix file instead of one guest
	guest_run_options guest;	// what each guest is given
	// "text", or "ktap": the KTAP document on stdout as the guest's cases
	// end, one subtest per suite (and per group with a matrix), people's
	// lines on stderr (reports/ktap.hpp).
	std::string format = "text";
	// --matrix: guests at once; 0: as many as the host's cores and
	// memory hold (vm/parallel_groups.hpp).
	unsigned jobs = 0;
};

// Returns the exit code (see cli/pinmatrix.cpp). Throws usage_error for bad
// options before anything is written.
int run_vm(const vm_options &opt);

// `pinmatrix kernel build`: builds (or finds cached) and prints the dir.
int build_kernel(const std::string &spec, const std::vector<std::filesystem::path> &patches,
		 const std::filesystem::path &cache);

} // namespace pinmatrix
