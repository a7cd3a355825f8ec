// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace pinmatrix {

struct kernel_info {
	std::string release;	// uname -r
	std::string version;	// uname -v
	std::string machine;
	std::string cmdline;	// /proc/cmdline
};

kernel_info read_kernel_info();

// A task as the scheduler has it: its state (/proc/PID/stat's field after
// the command: R, S, D, ...) and where it sleeps (/proc/PID/wchan; "0" or
// empty while it runs). Both empty for a task that is gone.
struct task_state {
	std::string state, wchan;
	std::string where() const;	// "state S at do_wait", "state R", "state ?"
};
task_state read_task_state(pid_t pid);

// The CPU time a task (or thread) has used so far, in user space and in
// the kernel (/proc/PID/stat utime and stime); nullopt when it cannot be
// read (the task is gone).
struct cpu_time {
	std::chrono::milliseconds user{0}, system{0};
};
std::optional<cpu_time> read_cpu_time(pid_t pid);

// Waits at most `bound` for the child pid to exit, reaping it (its status
// in `status`). nullopt: it exited; else where it was at the bound ("state
// R", "state D at mutex_lock"), left as it is: a task asleep in the kernel
// uninterruptibly outlives its SIGKILL for as long as that sleep lasts.
std::optional<std::string> reap_within(pid_t pid, int &status, std::chrono::milliseconds bound);

// What a kernel module is on the running kernel: "loaded" (or built in:
// /sys/module/NAME), "not loaded" (its file is under
// /lib/modules/RELEASE/kernel/DIR), or "not built".
std::string module_state(const std::string &name, const std::string &dir);

// /proc/vmstat counters by name (nr_foll_pin_acquired, ...).
std::map<std::string, uint64_t> read_vmstat();

// RLIMIT_MEMLOCK soft limit in bytes (nullopt: unlimited) and whether the
// process has CAP_IPC_LOCK: ib_umem_get() checks both.
struct memlock_info {
	std::optional<uint64_t> limit_bytes;
	bool cap_ipc_lock = false;
	uint64_t vm_pin_kb = 0;
	uint64_t vm_lck_kb = 0;
};
memlock_info read_memlock_info();

// The whole file; empty when it cannot be read.
std::string read_text_file(const std::string &path);
// A file that holds one decimal number (sysfs, debugfs); nullopt when it
// cannot be read or holds something else.
std::optional<uint64_t> read_number_file(const std::string &path);

} // namespace pinmatrix
