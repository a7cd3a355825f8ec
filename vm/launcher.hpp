// SPDX-License-Identifier: GPL-2.0
#pragma once

// `pinmatrix vm`: boots a kernel in QEMU (TCG: a stock guest hangs under
// this host's KVM) with the host root shared read-only over 9p, runs the
// matrix inside it and turns whatever happened into results.json. A guest
// panic, a hang (bounded by a timeout) or a missing result is an ERROR
// verdict for each case without a result, with the serial log kept.
// With --matrix, one guest boots per (kernel, boot) of the file and
// all their cases merge into one results.json.

#include <filesystem>
#include <string>
#include <vector>

#include "first_pin.hpp"

namespace pinmatrix {

struct vm_options {
	std::string kernel = "debian";	// see vm/kernels.hpp
	std::vector<std::filesystem::path> patches;	// for a build kernel
	std::string boot = "movable";	// --boot: a boot placement (matrix/boot.hpp)
	std::string append;		// more kernel command line
	unsigned memory_mib = 0;	// 0: what the boot needs
	unsigned cpus = 1;		// guest vCPUs (QEMU -smp; TCG runs one thread each)
	int timeout_s = 300;
	std::filesystem::path out;
	std::filesystem::path cache = "/var/cache/pinmatrix";
	std::filesystem::path matrix;	// a matrix file instead of one guest
	std::vector<std::string> cases;
	std::string guest_cmd;
	std::string fault;	// passed to `pinmatrix run --fault` in the guest
	int case_timeout_s = 60;
	bool strict = false;	// passed to `pinmatrix run --strict` in the guest
	pin_sources pins;	// passed to `pinmatrix run` in the guest
	// A managed node for tests (Ansible over SSH): QEMU user networking
	// (restrict=on) forwards 127.0.0.1:ssh_port to the guest's sshd, which
	// accepts ssh_key for root. The guest runs guest_cmd (if any), then
	// waits until DIR/guest/stop exists (or the timeout).
	unsigned ssh_port = 0;
	std::filesystem::path ssh_key;
	// After the cases, run pinmatrix_bench (next to this binary) in the
	// guest; its JSON becomes OUT/bench.json (benchmarks/README.md).
	bool bench = false;
	std::string bench_args;	// more pinmatrix_bench arguments (filter, min time)
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
