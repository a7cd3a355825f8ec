// SPDX-License-Identifier: GPL-2.0
#pragma once

// Registration telemetry and kernel traces for the cases (section 17 and
// 16.6 of the incident write-up). The run sets up one trace session (the
// first suite that asks, in its preflight); each case process installs a
// case_telemetry for its lifetime: every registration it makes (through
// register_memory()) is bracketed by trace markers and recorded with the
// facts of lib/diagnosis/registration_telemetry.hpp, and finish() turns them into
// records, each with its reconstructed kernel path and, on failure, the
// classification of its errno.
//
// In a record (observed.registrations[], see reports/README.md):
//   seq, role, api, device, address, length, allocation_class, mapping,
//   access, access_flags, foll_longterm_requested, errno, errno_name,
//   latency_ns, memlock {limit_bytes, hard_limit_bytes, cap_ipc_lock,
//   vm_pin_kb_before, vm_pin_kb_after, vm_lck_kb}, memory {mem_available_kb,
//   min_free_kb}, pages [{address, pfn, pfn_after, zone, migratetype,
//   placement, longterm_pinnable, maybe_dma_pinned, refcount, module_pins}],
//   pages_source, module_pins [{id, contract, address, pages}],
//   failure_stage, classification {class, rule, facts, ruled_out},
//   trace {outcome, one_line, lines, steps, ..., events}

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pin_module.hpp"
#include "placement.hpp"
#include "registration_observer.hpp"
#include "tracefs.hpp"

namespace pinmatrix {

// The run's trace session: set up on the first call (doc["kernel_trace"]
// says what it traces and what it skipped), shared by every suite, and
// inherited by the case processes. Never throws.
trace_session *run_trace_session(nlohmann::json &doc);
trace_session *current_run_trace_session();
// Removes the probes and the instance; also done at exit.
void end_run_trace_session(nlohmann::json &doc);

class case_telemetry final : public registration_observer {
public:
	// In the case's process, before its first registration. `module`, when
	// given, is the one holding the case's first pins (its LIST names
	// them) and probes the pages; otherwise /proc/self/pagemap does.
	explicit case_telemetry(const pin_module *module);
	~case_telemetry() override;
	case_telemetry(const case_telemetry &) = delete;
	case_telemetry &operator=(const case_telemetry &) = delete;

	// The role of the next registration ("the case's registration" and
	// the like are inferred when not given).
	void next_role(std::string role);
	void before(const registration_call &call) override;
	void after(const registration_call &call, int err, int64_t latency_ns) override;

	// Ends the capture: {"registrations": [...], "kernel_trace": {...}}.
	nlohmann::json finish();

	struct page_snapshot {
		uint64_t address = 0, pfn = 0;
		bool present = false;
		std::string zone, migratetype, placement, cma_area;
		std::optional<bool> longterm_pinnable;
		bool maybe_dma_pinned = false;
		std::optional<uint32_t> refcount;
		std::vector<std::string> module_pins;	// "FOLL_PIN pin #1"
	};
	struct snapshot {
		bool memlock_known = false;
		std::optional<uint64_t> memlock_soft, memlock_hard;
		bool cap_ipc_lock = false;
		uint64_t vm_pin_kb = 0, vm_lck_kb = 0;
		std::vector<page_snapshot> pages;
		std::string pages_source;
		nlohmann::json module_pins = nlohmann::json::array();
		std::optional<uint64_t> mem_available, min_free;
	};
	struct pending {
		int seq = 0;
		std::string role;
		registration_call call;
		int err = 0;
		int64_t latency_ns = 0;
		std::string allocation_class, mapping;
		snapshot before, after;
	};

private:
	// full: everything; else (after the call) only VmPin and the pages.
	snapshot take_snapshot(uintptr_t addr, size_t length, bool full);

	const pin_module *module_;
	std::optional<std::vector<cma_area>> cma_areas_;	// read once
	trace_session *trace_;
	std::string next_role_;
	std::vector<pending> done_;
	std::optional<pending> open_;
	registration_observer *previous_;
};

// In the parent: the observation's registrations and kernel trace, copied
// into what the judged record observed (the judge keeps only what it knows).
void attach_telemetry(nlohmann::json &observed, const nlohmann::json &observation);

} // namespace pinmatrix
