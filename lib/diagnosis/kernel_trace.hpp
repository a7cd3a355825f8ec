// SPDX-License-Identifier: GPL-2.0
#pragma once

// Kernel traces of a registration, as tracefs prints them, and the path of
// section 16.6 of the incident write-up reconstructed from them:
//
//   long-term pin requested                  long-term pin requested
//     pageblock = MIGRATE_CMA                  pageblock = MIGRATE_CMA
//     migrate P -> Q                           migrate P -> Q
//     retry GUP                                  source P has an existing device pin
//     pageblock(Q) != MIGRATE_CMA                migration fails
//     success                                  -ENOMEM
//
// No system calls here: lib/diagnosis/tracefs.cpp captures, this file reads. The
// events are those lib/diagnosis/tracefs.cpp sets up, under role names that do not
// depend on the kernel version (the probed symbol is in each event's site):
//   ib_umem_get, ib_umem_get_ret           ib_umem_get(dev, addr, size, access)
//   pin_user_pages_fast, ..._ret           the long-term GUP entry ib_umem_get calls
//   gup_longterm, gup_longterm_ret         __gup_longterm_locked (slow path)
//   longterm_check_ret, longterm_migrate_ret, longterm_collect_ret
//                                          check_and_migrate_movable_{pages,folios},
//                                          migrate_longterm_unpinnable_{pages,folios},
//                                          collect_longterm_unpinnable_{pages,folios}
//                                          (6.1 / 6.12 names; often inlined)
//   migrate_pages_ret                      migrate_pages(): pages not migrated or -errno
//   provider_reg_mr_ret                    the driver's reg_user_mr (rxe, mlx5)
//   mm_migrate_pages_start, mm_migrate_pages, set_migration_pte,
//   remove_migration_pte                   the migrate: tracepoints
// and trace_marker lines "pinmatrix: registration N begin|end ..." that
// bracket each registration.

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "foll_flags.hpp"

namespace pinmatrix {

struct trace_event {
	std::string task;
	int pid = 0;
	int cpu = 0;
	double timestamp = 0;
	std::string name;	// event name: "ib_umem_get_ret", "mm_migrate_pages", "tracing_mark_write"
	std::string text;	// what follows "name: "
	// "(ib_umem_get+0x0/0x3f0 [ib_uverbs])" of a kprobe; for a return
	// probe "(caller+off/size <- callee)", split into these two.
	std::string site, caller, callee;
	std::map<std::string, std::string> fields;	// key=value pairs of the text
	std::string raw;				// the line as read

	std::optional<std::string> field(const std::string &key) const;
	std::optional<int64_t> number(const std::string &key) const;	// decimal or 0x hex
};

// One line of a tracefs `trace` or `trace_pipe` file; nullopt for the
// header comments and anything that is not an event.
std::optional<trace_event> parse_trace_line(std::string_view line);
std::vector<trace_event> parse_trace(std::string_view text);

// Markers written around each registration (trace_marker): parse and make.
std::string registration_marker(int seq, bool begin, const std::string &detail);
struct marker {
	int seq = 0;
	bool begin = false;
	std::string detail;
};
std::optional<marker> parse_marker(const trace_event &e);

// The events of registration `seq`: from its begin marker to its end
// marker, of the marker's process only. Empty when the markers are absent.
std::vector<trace_event> registration_events(const std::vector<trace_event> &all, int seq);
// The events of process `pid` outside every registration (a first pin).
std::vector<trace_event> events_outside_registrations(const std::vector<trace_event> &all, int pid);

// A kernel return value printed as unsigned hex ("0xfffffffffffffff4") or
// signed decimal: the errno when it is an ERR_PTR / negative errno
// (-4095..-1), nullopt for a pointer or a count.
std::optional<int> return_errno(const trace_event &e, const std::string &key = "ret");


// The source PFN of a migration entry PTE as set_migration_pte prints it
// (x86-64: the swap entry's offset, stored inverted), for a kernel whose
// swap entries hold swp_pfn_bits of PFN (MAX_PHYSMEM_BITS - PAGE_SHIFT:
// 34 with 4-level paging, 40 with 5-level). 0 bits: cannot decode here.
std::optional<uint64_t> migration_pte_pfn(uint64_t pte, int swp_pfn_bits);
// The PFN of a present x86-64 PTE as remove_migration_pte prints it.
uint64_t present_pte_pfn(uint64_t pte);

// What the probes of the page and the module know, for the lines of the
// path no trace event gives (the pageblock, who holds the page).
struct path_page {
	uint64_t pfn = 0;
	std::string zone;		// "Movable", "Normal"
	std::string migratetype;	// "CMA", "Movable"
	std::optional<bool> longterm_pinnable;	// nullopt: unknown
};

struct path_inputs {
	std::string api = "ibv_reg_mr";
	int err = 0;				// what user space saw
	std::optional<path_page> before;	// the first page, as the registration began
	std::optional<path_page> after;		// and as it ended
	std::vector<std::string> existing_pins;	// "pinmatrix module FOLL_PIN pin #1", "maybe_dma_pinned"
	std::string kernel_release;
	foll_table foll;			// its FOLL_* values (foll_flags.hpp); empty: not decoded
	int swp_pfn_bits = 0;
	// Probe roles the session could not set up on this kernel: their
	// absence from the events says nothing.
	std::vector<std::string> missing_roles;
	bool missing(const std::string &role) const
	{
		return std::find(missing_roles.begin(), missing_roles.end(), role) != missing_roles.end();
	}
};

struct path_step {
	std::string text;
	std::string source;	// "trace", "module probe", "telemetry"
	int depth = 0;		// indentation level
};

struct trace_path {
	std::vector<path_step> steps;
	std::string outcome;		// "success" or "-ENOMEM", "-EPERM", ...
	bool from_trace = false;	// the kernel's events, not the probes alone
	std::vector<std::string> notes;

	// What the events say, for the classification (registration_telemetry.hpp).
	std::optional<bool> umem_called;		// ib_umem_get entered
	std::optional<bool> gup_reached;		// it called the long-term GUP
	std::optional<bool> longterm_flag;		// FOLL_LONGTERM in its gup_flags
	bool migration_attempted = false;		// reason longterm_pin
	int64_t migrate_succeeded = 0, migrate_failed = 0;
	std::optional<int> gup_errno, umem_errno, provider_errno;
	std::optional<uint64_t> migrated_from, migrated_to;	// PFNs from the migration PTEs
	// Which GUP path decided the pages, from the entries of
	// pin_user_pages_fast (every page asked) and __gup_longterm_locked
	// (those GUP-fast did not pin, handed to the slow path); nullopt where
	// either is not traced here or GUP was not reached.
	struct gup_split {
		int64_t requested = 0;		// pages asked of pin_user_pages_fast
		int64_t slow_path_pages = 0;	// of them, handed to __gup_longterm_locked
		int64_t gup_fast_pinned() const { return requested - slow_path_pages; }
		// "GUP-fast", "the slow path" or "both" (some pages each).
		std::string decided_by() const;
	};
	std::optional<gup_split> gup_paths;

	// One line: "long-term pin requested / ... / -ENOMEM".
	std::string one_line() const;
	// Indented lines, sources in brackets.
	std::string text() const;
};

trace_path reconstruct_path(const std::vector<trace_event> &events, const path_inputs &in);

nlohmann::json to_json(const trace_path &p);

} // namespace pinmatrix
