// SPDX-License-Identifier: GPL-2.0
#pragma once

// The harm a stranded pin does, as an oracle: ask the kernel for restricted
// memory back the way its users do, and see whether it can. ZONE_MOVABLE
// memory goes back by offlining the memory block that holds the page
// (/sys/devices/system/memory/memoryN/state): offline_pages() migrates every
// page out of the block, and loops while one cannot move (6.1 to 7.2 stop
// only for a fatal signal), so the attempt runs in a child that is killed
// at the bound, or once failed migrations prove the refusal (below). A
// block that went offline is put back online. CMA goes back by allocating the whole area that holds the page: through debugfs
// (cma/<area>/alloc, CMA_DEBUGFS), or for a hugetlb_cma area as 1 GiB
// hugetlb pages counted by the area's alloc_pages_success (CMA_SYSFS); then
// it is freed again.
//
// The answer is true (given back), false (refused: an errno, or failed
// migrations counted while the block would not go offline) or unknown with
// the reason (no memory hotplug in sysfs, a block that was not online, a
// block still offlining at the bound without that proof, a placement with
// no oracle here yet).

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace pinmatrix {

struct give_back_attempt {
	std::string method;		// "offline memory block 9 (/sys/devices/system/memory/memory9)"
	std::optional<bool> given_back;	// nullopt: unknown, detail says why
	std::string detail;		// what the kernel answered; how the block was put back
	int64_t latency_ns = 0;		// the attempt, to its answer, its proof of refusal or its bound
};

// How long an attempt may take, and whether a refusal may be proved before
// that. offline_pages() retries a page it cannot migrate until a fatal
// signal, and each failed try of migrate_pages() (itself up to ten passes)
// counts the page in /proc/vmstat's pgmigrate_fail: that count rising
// `failed_migrations_proof` times while the block offlines is the refusal,
// shown without waiting out the bound.
struct give_back_patience {
	std::chrono::milliseconds bound;	// without progress (see offline_bound)
	bool refusal_expected;	// stop at the proof of refusal (never where the memory is expected back)
};

// A busy machine (memory pressure, TCG) can take seconds to move a block
// before it even reaches the page a pin holds: the bound is how long an
// attempt may go without the kernel moving a page (pgmigrate_success), and
// an attempt that keeps moving pages has progress_cap_factor bounds at most.
inline constexpr std::chrono::milliseconds offline_bound = std::chrono::seconds(12);
inline constexpr int progress_cap_factor = 2;
// Where a refusal is expected (B's first pin held): the proof, or the bound
// (a quiet machine proves it within half a second).
inline constexpr give_back_patience expecting_refusal{offline_bound, true};
// Where the memory is expected back: a migration may fail on the way (a
// reference taken for a moment), so no early stop; a refusal here fails
// the case.
inline constexpr give_back_patience expecting_return{offline_bound, false};
// Failed migrations of the block's pages, while it offlines, that prove a
// refusal: more than one, so that one page held for a moment is not it.
inline constexpr uint64_t failed_migrations_proof = 3;

// Whether an attempt still running is stopped now: the proof of a refusal
// (where one is expected), the bound passed since the kernel last moved a
// page (since the start where it counts none), or progress_cap_factor
// bounds since the start.
bool stop_attempt_now(give_back_patience patience, std::chrono::nanoseconds since_start,
		      std::chrono::nanoseconds since_progress, std::optional<uint64_t> failed_migrations);

// The answer of an offline that had not ended when the child was killed (at
// the proof, or at the bound), from /proc/vmstat's pgmigrate_fail rise
// meanwhile (nullopt: the kernel does not count it, no VM_EVENT_COUNTERS).
// Refused only with the proof: a block still offlining with fewer failed
// migrations is slow, not refused (its pages wait for room under memory
// pressure, or for the CPU), and unknown. Sets g.given_back and g.detail.
void answer_unfinished_offline(give_back_attempt &g, std::optional<uint64_t> failed_migrations,
			       give_back_patience patience);

// Why the memory holding pfn could not be given back whatever the pins:
// no memory hotplug in sysfs, a block that is not online, or a block with
// PG_reserved pages (/proc/kpageflags; boot-time allocations, which the
// kernel lets into ZONE_MOVABLE's top block and never moves). nullopt:
// nothing in the way but what the case holds.
std::optional<std::string> give_back_obstacle(uint64_t pfn);
// !give_back_obstacle(pfn): a page the pin suite prefers (lib/placement.hpp).
bool memory_can_go_back(uint64_t pfn);

// How long a child killed at its bound or proof may take to exit.
// offline_pages() sees a fatal signal at its next pass, but a pass can wait
// in the kernel where none reaches it (seen once on 6.12 under TCG: a
// gup-ref block still offlining 100 s after SIGKILL, the case timed out in
// waitpid() and its verdict was lost). Past it the attempt's answer stands
// and says so; the child is left running.
inline constexpr std::chrono::milliseconds exit_after_kill = std::chrono::seconds(10);

// Asks for the memory holding pfn back, for a page in `placement`
// ("movable", "cma", ...; other placements have nothing to give back).
give_back_attempt give_back_memory(uint64_t pfn, const std::string &placement, give_back_patience patience);

} // namespace pinmatrix
