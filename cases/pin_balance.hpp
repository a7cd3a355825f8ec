// SPDX-License-Identifier: GPL-2.0
#pragma once

// The pins a case leaves behind (aa6f8b2593b5: a refused long-term pin once
// left its pages pinned). The kernel counts every FOLL_PIN taken and given
// back (/proc/vmstat nr_foll_pin_acquired, nr_foll_pin_released); once a
// case's process is gone, the count of pins held system-wide must be back
// where it was before the case, or the case kept some.
//
// The count is the whole machine's. A pinner that lets go late (io_uring's
// ring exit runs in a workqueue) and others' passing pins (9p pins a
// write's pages while it runs) come and go within pin_balance_grace. Only
// on a machine where nothing but the run pins (the suite's guest, or where
// PINMATRIX_QUIET_MACHINE=1 says so) does a difference decide the case;
// elsewhere it is evidence in the record, said not to be the verdict.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "case_record.hpp"

namespace pinmatrix {

inline constexpr std::chrono::milliseconds pin_balance_grace{2000};

// nr_foll_pin_acquired - nr_foll_pin_released, the per-CPU counts folded
// in first where this process may (/proc/sys/vm/stat_refresh, root);
// nullopt where the kernel counts neither.
std::optional<int64_t> foll_pins_held();

// Whether this machine's count is the run's alone (PINMATRIX_QUIET_MACHINE).
bool quiet_machine();

class pin_balance {
public:
	using reader = std::function<std::optional<int64_t>()>;
	pin_balance(reader read, bool decides, std::chrono::milliseconds grace = pin_balance_grace)
		: read_(std::move(read)), decides_(decides), grace_(grace)
	{
	}

	// Before a case runs: where the count stands.
	void before_case();
	// Once the case's process is gone: waits (grace at most) for the count
	// to come back; where it does not, the record says how many pins the
	// case kept (details.pin_balance), a FAIL where the count decides.
	void after_case(case_record &r);

private:
	reader read_;
	bool decides_;
	std::chrono::milliseconds grace_;
	std::optional<int64_t> level_;	// after the last case
	std::optional<int64_t> base_;	// before this one
};

} // namespace pinmatrix
