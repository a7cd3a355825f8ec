// SPDX-License-Identifier: GPL-2.0
#pragma once

// `pinmatrix run`: runs the plan on this machine (a guest or a real node).
// Each case runs in a child process bounded by a timeout, so a registration
// that never returns, or a crash, is an ERROR verdict for that case and the
// rest still run; the child's exit also releases every pin it held.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "first_pin.hpp"
#include "placement.hpp"

namespace pinmatrix {

struct run_options {
	std::vector<std::string> cases;			// ids or names; empty: all
	std::string device;				// RDMA device; empty: first
	std::filesystem::path out;			// results.json goes here
	std::optional<std::filesystem::path> module;	// pinmatrix.ko to load if absent
	int case_timeout_s = 60;
	size_t find_budget_mib = 2048;
	int latency_samples = 5;	// --latency-samples: registrations a pin case times
	// Restricted placement of this boot: "auto" (detect), "movable", "cma",
	// "ordinary" (only the ordinary cases).
	std::string placement = "auto";
	// Who takes the pins (cases/pin/plan.hpp): --first-pin module | io_uring |
	// cuda | hip, --second-pin ibv_reg_mr | io_uring | vfio-type1.
	pin_sources pins;
	// Fault injection, to prove that faults end as ERROR verdicts:
	// "panic-at=ID" panics the kernel as case ID starts (sysrq 'c'),
	// "hang-at=ID" makes case ID's process never return (in user space),
	// "kernel-hang-at=ID" makes its pin through the module sleep in the
	// kernel until the process is killed (pinmatrix.ko's parameter
	// stall_pin_until_killed, set for that case only), "kernel-spin-at=ID"
	// makes it spin there, runnable (spin_pin_until_killed),
	// "kernel-hang-in-thread-at=ID" stalls it so in a thread of its own
	// while the case's main thread waits for that thread, and
	// "kernel-oops-at=ID" makes it oops with a lock held that every later
	// pin then waits on (oops_in_pin), and "kernel-leak-pin-at=ID" makes
	// the module keep its pages pinned when the case releases its pin
	// (leak_pins): the pin balance check's fault.
	std::string fault;
	// --format: "text" (people's lines on stdout) or "ktap" (the KTAP
	// document on stdout as cases end, people's lines on stderr).
	std::string format = "text";
	// --strict: a failure a known kernel bug of this kernel predicts
	// (matrix/known_bugs.cpp) counts as a FAIL, and so does a pass where
	// such a bug should have shown; else they are XFAIL and XPASS.
	bool strict = false;
	// --results-only: results.json in --out, no reports (pinmatrix vm's
	// guest: the host writes them from the merged results).
	bool results_only = false;
};

struct fault_plan {
	std::string panic_at;
	std::string hang_at;
	std::string kernel_hang_at;
	std::string kernel_hang_in_thread_at;
	std::string kernel_spin_at;
	std::string kernel_oops_at;
	std::string kernel_leak_pin_at;
};
// Throws usage_error for anything but the forms above with a known case.
fault_plan parse_fault(const std::string &spec);

// "auto" detects this boot's; else a placement name. Throws usage_error.
placement restricted_placement(const std::string &spec);

// Whether a timed-out case's stuck thread (its record's stuck_task) ran in
// the kernel, and only there, while the runner watched: a system call that
// never returns, which FAILs the case.
bool runs_in_the_kernel(const nlohmann::json &stuck);

// Returns the exit code: 0 pass, 1 fail or error, 4 all skipped.
int run_matrix(const run_options &opt);

} // namespace pinmatrix
