// SPDX-License-Identifier: GPL-2.0
#pragma once

// What `pinmatrix vm` gives each guest it boots, from the command line to
// the group: one struct that vm_options holds (vm/launcher.hpp) and each
// group copies (vm/group_spec.hpp), a matrix file's group adding its own
// append, memory and cases.

#include <filesystem>
#include <string>
#include <vector>

#include "data_dir.hpp"
#include "first_pin.hpp"

namespace pinmatrix {

struct guest_run_options {
	std::string append;		// more kernel command line
	unsigned memory_mib = 0;	// 0: what the boot needs
	unsigned cpus = 1;		// guest vCPUs (QEMU -smp; TCG runs one thread each)
	int timeout_s = 300;		// QEMU's start to the guest's power-off
	std::string accel = "auto";	// auto | kvm | tcg (vm/accel.hpp)
	std::string kvm_cpu = "host";	// QEMU's -cpu under KVM
	std::filesystem::path cache = default_cache_dir();
	std::vector<std::string> cases;	// empty: all
	std::string guest_cmd;	// a shell command instead of the matrix (tests)
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
};

} // namespace pinmatrix
