// SPDX-License-Identifier: GPL-2.0
#pragma once

// A group's guest booted in QEMU until it powers off or its timeout (then
// its task and CPU dumps are asked for through QMP before QEMU is killed),
// once more when its kernel died before its job started; and what the
// boot was: the job's exit code, why it ended early, its record
// (results.json's "vm").

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "group_spec.hpp"
#include "qemu_command.hpp"

namespace pinmatrix {

// One run of QEMU.
struct qemu_run {
	std::optional<int> status;	// nullopt: killed at the timeout
	int signal = 0;			// killed by a signal not ours
	nlohmann::json wedged_dump;	// the guest's dumps at the timeout
	int start_bound_s = 0;		// killed: the job had not started by then (KVM)
	double wall_s = 0;
};

struct booted_guest {
	qemu_run q;
	std::vector<std::string> argv;
	nlohmann::json retries = nlohmann::json::array();	// vm.boot_retries: the boots that died before the job
	std::string accel;		// what the guest ran under: "kvm" or "tcg"
	nlohmann::json accel_fallback;	// vm.accel_fallback: why auto booted with TCG (null: it did not)
};

// Boots the guest (QEMU's argv: vm/qemu_command.hpp) under the accelerator
// --accel chooses (vm/accel.hpp: auto falls back to TCG when a KVM guest
// does not start), and once more when its kernel died before its job
// started. watch(), when given, every half
// second while QEMU runs.
booted_guest boot_until_its_job_starts(const group_spec &g, const prepared_guest &guest, const guest_needs &needs,
				       const std::string &cmdline, const std::function<void()> &watch);

// A guest whose kernel ended before its job started: QEMU exited by itself
// and stage2 never marked guest/timeline.
bool died_before_its_job(const qemu_run &q, const std::filesystem::path &guest_dir);

// The job's exit code: guest/exit_code, or (a full results disk can keep
// that file from being written) what stage2 said on the console.
std::optional<int> guest_job_exit(const std::filesystem::path &out);

// Why the guest ended early ("" when it did not).
std::string how_it_ended(const qemu_run &q, const std::optional<int> &job_status, int timeout_s);

// The boot's record: results.json's "vm".
nlohmann::json vm_record(const group_spec &g, const booted_guest &booted, const std::string &cmdline,
			 const std::optional<int> &job_status, const std::string &ended);

// ": boot 2.9 s, setup 1.1 s, run 5.2 s, finish 0.3 s, qemu 0.7 s", from
// the record's phases_s.
std::string phases_text(const nlohmann::json &phases);

// What the harness costs a boot, beside its cases: QEMU's wall time
// (boot to verdict) less the sum of the cases' durations, and its share of
// the wall time ({"cases_s", "harness_s", "share"}); empty with no timed
// case or no wall time.
nlohmann::json harness_share(const nlohmann::json &cases, double wall_s);

// ", cases 8.7 s, harness 48%", from the record's harness; "" without one.
std::string harness_text(const nlohmann::json &vm);

// What the guest's init needs of the host's root, which it mounts
// read-only as its own (vm/guest/init): the directories it mounts over
// (/lib/modules, /run) and moves into (/dev, /proc, /sys), and /bin/bash.
// "" when ROOT has them all, else what is missing and what to do (a
// container or a chroot with no kernel installed has no /lib/modules).
std::string host_root_unfit_for_guest(const std::filesystem::path &root = "/");

// The guest's preparation (kernel, test modules, initramfs) when it took a
// second or more (a kernel fetched, modules built): "the guest prepared in
// 61.2 s: kernel 30.1 s, test modules 29.0 s, initramfs 2.1 s"; else "".
std::string prepared_text(const step_times &steps);
// vm.prepare_ms's sum in seconds (0 without it): the part of a run's wall
// time that came before the boot.
double prepared_seconds(const nlohmann::json &vm);

} // namespace pinmatrix
