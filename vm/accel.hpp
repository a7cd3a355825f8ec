// SPDX-License-Identifier: GPL-2.0
#pragma once

// Which accelerator a guest boots with (--accel auto|kvm|tcg). KVM boots a
// guest in about a second where it works; on some hosts /dev/kvm opens and
// a guest still never starts (here: a PVM flavour of KVM, where QEMU's
// -cpu host aborts on an MSR and -cpu qemu64 hangs before the kernel's
// first line). auto therefore tries KVM, gives it kvm_start_bound to reach
// the guest's job, and boots with TCG when it does not; a failure is
// remembered for the host's boot (the cache's accel/, keyed by its
// boot_id, and by the CPU model KVM guests get, --kvm-cpu), so the next
// guests go straight to TCG. The record says which accelerator ran and,
// after a fallback, why.

#include <chrono>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace pinmatrix {

// What a KVM guest is given to start its job before auto gives up on it.
constexpr std::chrono::seconds kvm_start_bound{15};

struct accel_choice {
	std::string accel;		// "kvm" or "tcg": what to boot with first
	bool may_fall_back = false;	// auto: a KVM guest that does not start is booted again with TCG
	nlohmann::json fallback;	// null, or why auto chose TCG without trying KVM
};

// The accelerator for asked ("auto", "kvm", "tcg"): auto takes KVM when
// kvm_device opens read-write and this host boot has no failure of KVM
// with kvm_cpu on record in cache, else TCG with the reason.
accel_choice choose_accel(const std::string &asked, const std::filesystem::path &cache, const std::string &kvm_cpu,
			  const std::filesystem::path &kvm_device = "/dev/kvm");

// Records that a KVM guest with kvm_cpu did not start, for the rest of this
// host boot: why, and the guest kernel it was seen with. Returns the record.
nlohmann::json remember_kvm_failure(const std::filesystem::path &cache, const std::string &kvm_cpu,
				    const std::string &why, const std::string &guest_kernel);

// This host boot's record of KVM with kvm_cpu failing, or null.
nlohmann::json kvm_failure_on_record(const std::filesystem::path &cache, const std::string &kvm_cpu);

// Throws usage_error for a --kvm-cpu QEMU would not take as one -cpu
// argument or that cannot name a file (its record's): letters, digits and
// "_.,+-=" only.
void check_kvm_cpu(const std::string &kvm_cpu);

} // namespace pinmatrix
