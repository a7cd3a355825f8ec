// SPDX-License-Identifier: GPL-2.0
#pragma once

// Registration telemetry (section 17 of the incident write-up): for every
// memory registration, the facts a failure report needs, and what an ENOMEM
// meant. ib_umem_get() returns ENOMEM for several unrelated reasons (section
// 12); four are told apart here:
//   memlock quota       pinned_vm + the new pages > RLIMIT_MEMLOCK without
//                       CAP_IPC_LOCK (checked before any page is pinned)
//   long-term placement blocked by an existing pin
//                       a page in ZONE_MOVABLE or a MIGRATE_CMA pageblock
//                       must migrate first, and a pin already on it (a
//                       FOLL_PIN without FOLL_LONGTERM) makes that fail
//   capacity            no memory to allocate from
//   unknown             none of the above fits the facts
// One function decides, by one rule table, and says which facts decided.
// No system calls here: lib/diagnosis/case_telemetry.cpp and lib/diagnosis/explain.cpp
// gather the facts.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernel_trace.hpp"

namespace pinmatrix {

enum class enomem_class { memlock_quota, placement_blocked_by_pin, capacity, unknown };
// "memlock quota", "long-term placement blocked by an existing pin",
// "capacity", "unknown".
const char *name(enomem_class c);

// What the classification looks at. Optional facts are unknown when absent.
struct registration_facts {
	int err = 0;			// errno of the registration
	bool foll_longterm = true;	// the API asks for FOLL_LONGTERM (ibv_reg_mr does)
	uint64_t length = 0;		// bytes, whole pages
	uint64_t page_size = 4096;

	// Memlock as the call began (ib_umem_get: pinned_vm + pages > limit).
	bool memlock_known = false;
	std::optional<uint64_t> memlock_limit;	// soft RLIMIT_MEMLOCK; nullopt: unlimited
	bool cap_ipc_lock = false;
	uint64_t vm_pin_bytes = 0;		// VmPin before the call

	// The pages, as the call began.
	size_t pages = 0;			// in the range
	size_t pages_placement_known = 0;
	size_t pages_not_longterm_pinnable = 0;	// ZONE_MOVABLE, MIGRATE_CMA
	std::string not_pinnable_where;		// "zone Movable", "pageblock MIGRATE_CMA"
	// Pins this tool can see: the test module's (its LIST, on its own
	// file), and the page flag FOLL_PIN leaves (maybe_dma_pinned).
	bool pins_visible = false;
	size_t pages_module_pinned = 0;
	std::vector<std::string> module_pins;	// "FOLL_PIN pin #1"
	size_t pages_maybe_dma_pinned = 0;

	// Memory.
	std::optional<uint64_t> mem_available;	// bytes (MemAvailable)
	std::optional<uint64_t> min_free;	// bytes (vm.min_free_kbytes)

	// The kernel trace of the call, when there was one.
	bool traced = false;
	std::optional<bool> gup_reached;	// ib_umem_get called the long-term GUP
	bool migration_attempted = false;	// MR_LONGTERM_PIN
	int64_t migrate_failed = 0, migrate_succeeded = 0;
	std::optional<int> gup_errno, umem_errno;
};

struct classification {
	std::string label;			// name(enomem_class), or "not ENOMEM"
	std::optional<enomem_class> cls;	// for an ENOMEM
	std::string rule;			// the rule that decided
	std::vector<std::string> facts;		// the facts that decided it
	std::vector<std::string> ruled_out;	// earlier rules and why they did not apply
};

// One rule of the table: it applies (and says with which facts) or not
// (and says why not).
struct classification_rule {
	const char *id;
	enomem_class cls;
	const char *meaning;
	bool (*applies)(const registration_facts &f, std::vector<std::string> &why);
};
// In the order they are tried; the first that applies decides, "unknown"
// when none does.
const std::vector<classification_rule> &classification_rules();

// For any failed registration (err != 0): ENOMEM by the table, any other
// errno as "not ENOMEM" (EPERM with a zero memlock limit says so).
classification classify_failure(const registration_facts &f);

nlohmann::json to_json(const classification &c);

// Where a failed registration stopped, from its trace (or the facts).
std::string failure_stage(const registration_facts &f, const trace_path *trace);

} // namespace pinmatrix
