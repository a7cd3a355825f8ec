// SPDX-License-Identifier: GPL-2.0
#include "race_cases.hpp"

#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <latch>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "clock.hpp"
#include "isolation_release.hpp"
#include "mapping.hpp"
#include "pin_module.hpp"
#include "common/second_pin.hpp"
#include "verbs.hpp"
#include "suite.hpp"
#include "sys_error.hpp"

namespace pinmatrix::race_cases {

using nlohmann::json;

// The table.

namespace {

const std::vector<race_case> table = {
	{"reg-mr-same-buffer",
	 "4 threads ibv_reg_mr one 64-page buffer of restricted memory at once, 20 rounds: every page of a "
	 "buffer any of them registered has left restricted memory",
	 "ibv_reg_mr", 4, 64, 20},
	{"io-uring-same-buffer",
	 "4 threads register one 64-page buffer of restricted memory as io_uring fixed buffers at once, 20 "
	 "rounds: every page of a buffer any of them pinned has left restricted memory",
	 "io_uring", 4, 64, 20},
	{"mixed-same-buffer",
	 "ibv_reg_mr and io_uring threads (2 each) on one 64-page buffer of restricted memory at once, 20 "
	 "rounds: as above",
	 "mixed", 4, 64, 20},
	// An mlock()ed page waits in its CPU's mlock batch with an extra
	// reference, on the LRU; a GUP that checked the LRU flag rather than
	// the count (before 98c6d259319e) did not drain the batch and failed
	// to migrate. Refusal is legal; success in place is not.
	{"mlock-batch-reg-mr",
	 "thread 0 mlock()s one 64-page buffer of restricted memory on CPU 0 while 3 threads ibv_reg_mr it "
	 "on the next CPU, 20 rounds: pages in a per-CPU mlock batch; no registration succeeds in place",
	 "mlock+ibv_reg_mr", 4, 64, 20},
	// 1aaf8c122918's race by construction, not by chance: the window in
	// which another pinner has the folios isolated is held open (the
	// module locks them, PINMATRIX_PIN_LOCK, so the first registration's
	// migration waits with them isolated) while the second registers.
	{"reg-mr-while-isolated",
	 "ibv_reg_mr of a 16-page buffer of restricted memory while another registration's migration holds "
	 "every folio of it isolated from the LRU (waiting for folio locks the test module holds), 3 rounds: "
	 "the second registration cannot isolate them, and must not succeed in place",
	 "isolated+ibv_reg_mr", 2, 16, 3},
};

} // namespace

const std::vector<race_case> &case_table() { return table; }

// The body.

namespace {

// The row whose first registration holds the buffer isolated for the
// second (isolated_round()).
bool holds_isolated(const race_case &c)
{
	return std::string(c.pinners) == "isolated+ibv_reg_mr";
}

// The long-term pinner of a thread; "" for the thread that mlock()s.
std::string pinner_of(const race_case &c, unsigned thread)
{
	const std::string pinners = c.pinners;
	if (pinners == "mixed")
		return thread % 2 ? "io_uring" : "ibv_reg_mr";
	if (pinners == "mlock+ibv_reg_mr")
		return thread ? "ibv_reg_mr" : "";
	if (holds_isolated(c))
		return "ibv_reg_mr";
	return pinners;
}

// Thread 0 on CPU 0, the others on the next CPU (where there is one), so
// that what thread 0's mlock() batched is another CPU's.
void place_thread(unsigned thread)
{
	const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(thread && cpus > 1 ? 1 : 0, &set);
	sched_setaffinity(0, sizeof(set), &set);	// best effort: a race either way
}

// Moves the page at `from` to `to` (mremap(), which keeps the page: its
// PFN, zone and pageblock go with it).
void move_page(std::byte *from, std::byte *to)
{
	if (mremap(from, page_size(), page_size(), MREMAP_MAYMOVE | MREMAP_FIXED, to) != to)
		throw last_sys_error("mremap of a restricted page into the race buffer");
}

// Where a round's buffer must be, and the RDMA device of its pins.
struct body_options {
	std::string device;		// RDMA device; empty: the first one
	placement restricted = placement::movable;
	size_t find_budget_bytes = 64 << 20;
};

// A buffer of c.pages pages, every one in restricted memory, by
// construction: anonymous 4 KiB pages are faulted in chunk by chunk and
// each one that landed in restricted memory is moved into the buffer,
// until it is full. A run of fresh pages all in it is luck on a CMA boot,
// where CMA takes movable allocations only once it holds more than half
// the free pages, interleaved with ordinary ones.
mapping restricted_buffer(const race_case &c, const page_prober &probe, const body_options &opt)
{
	const size_t ps = page_size(), chunk_pages = 1024;
	mapping buf = mapping::map(size_t(c.pages) * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS);
	std::vector<mapping> tried;	// held, so that the next chunk gets other pages
	size_t placed = 0;
	for (size_t spent = 0; placed < c.pages && spent < opt.find_budget_bytes; spent += chunk_pages * ps) {
		mapping m = populated_pages(chunk_pages * ps);
		const auto pages = probe.probe_pages(m.addr(), chunk_pages);
		for (size_t i = 0; i < chunk_pages && placed < c.pages; i++)
			if (classify(pages[i]) == opt.restricted)
				move_page(m.data() + i * ps, buf.data() + placed++ * ps);
		tried.push_back(std::move(m));
	}
	if (placed == c.pages)
		return buf;
	no_page_found(opt.restricted, opt.find_budget_bytes,
		      std::to_string(c.pages) + " pages (found " + std::to_string(placed) + ")");
}

struct round_result {
	std::vector<int> errnos;	// of the pinning threads
	std::optional<int> mlock_err;	// of the mlock()ing thread, where there is one
	// isolated+ibv_reg_mr: the first registration held the buffer isolated
	// (its migration waiting), and the second returned while it did.
	std::optional<bool> held_isolated, second_returned_while_isolated;
	std::optional<std::string> window_ended_by;	// isolation_release::window_end
	int64_t second_cpu_ms = 0;
	size_t left_restricted = 0;	// pages of the buffer still in restricted memory after all
	size_t pinned_restricted = 0;	// of those, the module says maybe DMA-pinned (module probe only)
	size_t unplaced = 0;		// pages the probe could not place (absent, unreadable pageblock)
};

// A page the probe cannot tell in or out of restricted memory: absent, or
// unknown where CMA is (a CMA pageblock may lie in any zone); a page of a
// known zone other than ZONE_MOVABLE has left ZONE_MOVABLE.
bool unplaced(const pinmatrix_page &p, placement restricted)
{
	if (!(p.flags & PINMATRIX_PAGE_PRESENT))
		return true;
	if (classify(p))
		return false;
	return restricted == placement::cma || p.zone == PINMATRIX_ZONE_UNKNOWN;
}

// Where the buffer's pages are once the round's pins are taken; then the
// pins go.
void place_and_release(const race_case &c, const page_prober &probe, const body_options &opt, const mapping &buf,
		       std::vector<std::unique_ptr<second_pinner>> &pinners, round_result &r)
{
	for (const auto &p : probe.probe_pages(buf.addr(), c.pages)) {
		r.unplaced += unplaced(p, opt.restricted);
		if (classify(p) == opt.restricted) {
			r.left_restricted++;
			r.pinned_restricted += (p.flags & PINMATRIX_PAGE_MAYBE_DMA_PINNED) != 0;
		}
	}
	for (auto &p : pinners)
		if (p)
			p->release();
}

// The window holds at most second_pin_window; it ends as soon as the second
// registration returned, or spent second_pin_retry_proof of CPU in the call
// (one pass over 16 pages takes ~20 ms under TCG: a kernel that retries has
// made ten or more passes by then).
constexpr std::chrono::milliseconds isolation_wait{10000}, second_pin_window{3000}, second_pin_retry_proof{300};

// The first registration's migration waits for the folio locks the module
// holds, every folio of the buffer isolated meanwhile; the second
// registration then meets folios it cannot isolate. A correct kernel
// retries it until the first one's migration is done (the helper releases
// the locks after the window); a kernel with 1aaf8c122918 returns it at
// once, in place. Both threads exist before the first one can wait
// (isolation_release.hpp: nothing here may need the mmap lock then).
round_result isolated_round(const race_case &c, const page_prober &probe, const body_options &opt,
			    std::vector<std::unique_ptr<second_pinner>> &pinners, const pin_module &module,
			    const isolation_release &release)
{
	mapping buf = restricted_buffer(c, probe, opt);
	held_pin locks = module.pin(PINMATRIX_CONTRACT_GUP_REF, buf.addr(), c.pages,
				    PINMATRIX_PIN_WRITE | PINMATRIX_PIN_LOCK);
	round_result r;
	r.errnos.assign(1, 0);
	int second_err = 0;
	bool second_ran = false;
	int64_t first_end = 0, second_end = 0;
	pid_t second_tid = 0;
	std::latch second_ready(1);
	std::thread second([&] {
		// Its malloc arena (an mmap()) now, not in the window; volatile, or
		// the compiler drops the pair (measured: round 1 waited in mmap()).
		void *volatile arena = malloc(4096);
		free(arena);
		second_tid = pid_t(syscall(SYS_gettid));
		second_ready.count_down();
		char go = 'N';
		if (read(release.go_fd(), &go, 1) == 1 && go == 'I') {
			second_err = pinners[1]->take(buf.data(), buf.size()).err;
			second_end = monotonic_raw_ns();
			release.second_returned();
			second_ran = true;
		}
	});
	second_ready.wait();
	std::thread first([&] {
		r.errnos[0] = pinners[0]->take(buf.data(), buf.size()).err;
		first_end = monotonic_raw_ns();
	});
	release.start(locks.id(), second_tid);
	first.join();
	second.join();
	(void)locks.release();	// the helper's UNPIN came first: ENOENT
	const auto t = release.finish();
	r.held_isolated = t.isolated && first_end > t.released_ns;
	if (second_ran) {
		r.errnos.push_back(second_err);
		r.second_returned_while_isolated = second_end < t.released_ns;
		r.window_ended_by = name(t.ended);
		r.second_cpu_ms = t.second_cpu_ms;
	}
	place_and_release(c, probe, opt, buf, pinners, r);
	return r;
}

round_result race_round(const race_case &c, const page_prober &probe, const body_options &opt,
			std::vector<std::unique_ptr<second_pinner>> &pinners)
{
	mapping buf = restricted_buffer(c, probe, opt);
	const size_t length = buf.size();
	round_result r;
	r.errnos.assign(c.threads, 0);
	std::barrier start(c.threads);
	std::vector<std::thread> threads;
	for (unsigned t = 0; t < c.threads; t++)
		threads.emplace_back([&, t] {
			place_thread(t);
			start.arrive_and_wait();
			if (pinners[t])
				r.errnos[t] = pinners[t]->take(buf.data(), length).err;
			else
				r.mlock_err = mlock(buf.data(), length) ? errno : 0;
		});
	for (auto &t : threads)
		t.join();
	// The mlock()ing thread pins nothing: its errno is not a pin's.
	for (unsigned t = c.threads; t-- > 0;)
		if (!pinners[t])
			r.errnos.erase(r.errnos.begin() + t);
	place_and_release(c, probe, opt, buf, pinners, r);
	return r;
}

json run_rounds(const race_case &c, const page_prober &probe, const body_options &opt)
{
	std::vector<std::unique_ptr<second_pinner>> pinners;
	for (unsigned t = 0; t < c.threads; t++) {
		const std::string pinner = pinner_of(c, t);
		pinners.push_back(pinner.empty() ? nullptr : open_second_pinner(pinner, opt.device));
	}
	// isolated+ibv_reg_mr: the module's folio locks, and the helper that
	// releases them, forked while this process has one thread.
	std::optional<pin_module> module;
	std::optional<isolation_release> release;
	if (holds_isolated(c)) {
		// No khugepaged collapse of this mm's pages meanwhile: it takes the
		// mmap lock for writing, and queued behind the waiting registration
		// it would hold off the second one's, as an mmap() does.
		if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
			throw last_sys_error("prctl(PR_SET_THP_DISABLE)");
		module.emplace(pin_module::open());
		release.emplace(*module, isolation_wait, second_pin_window, second_pin_retry_proof);
	}
	json rounds = json::array();
	for (unsigned i = 0; i < c.rounds; i++) {
		const round_result r = release ? isolated_round(c, probe, opt, pinners, *module, *release)
					       : race_round(c, probe, opt, pinners);
		json round = {{"errnos", r.errnos},
			      {"pages_left_restricted", r.left_restricted},
			      {"pages_left_restricted_and_pinned", r.pinned_restricted},
			      {"pages_unplaced", r.unplaced}};
		if (r.mlock_err)
			round["mlock_errno"] = *r.mlock_err;
		if (r.held_isolated)
			round["first_pin_held_isolated"] = *r.held_isolated;
		if (r.second_returned_while_isolated)
			round["second_pin_returned_while_isolated"] = *r.second_returned_while_isolated;
		if (r.window_ended_by) {
			round["window_ended_by"] = *r.window_ended_by;
			round["second_pin_cpu_ms_in_window"] = r.second_cpu_ms;
		}
		rounds.push_back(round);
	}
	return {{"observation",
		 {{"rounds", rounds},
		  {"probe", probe.probe_name()},
		  {"placement", name(opt.restricted)},
		  {"cpus", std::thread::hardware_concurrency()}}}};
}

} // namespace

json run_case(const race_case &c, const suite_options &opt)
{
	const auto probe = open_page_probe(opt.pins.without_module());
	return run_rounds(c, probe.get(), {opt.device, opt.restricted, size_t(64) << 20});
}

// The judge.

namespace {

std::string expected_summary(const race_case &c)
{
	const unsigned pins = c.threads - (std::string(c.pinners) == "mlock+ibv_reg_mr" ? 1 : 0);
	return "no success in place: any of " + std::to_string(pins) +
	       " racing pins that succeeds leaves none of the buffer's pages in restricted memory (ENOMEM legal)";
}

void expects(const race_case &c, const std::optional<kernel_version> &, case_record &r)
{
	r.details = {{"source", c.checks}, {"second_pin", c.pinners}};
	r.expected = {{"summary", expected_summary(c)},
		      {"threads", c.threads},
		      {"pages", c.pages},
		      {"rounds", c.rounds},
		      {"success_in_place", false}};
}

// A row whose pins race an mlock(): a round whose mlock() failed (or said
// nothing) put no page in a per-CPU mlock batch.
void judge_mlock(const race_case &c, const json &rounds, case_record &r)
{
	if (std::string(c.pinners) != "mlock+ibv_reg_mr")
		return;
	size_t failed = 0;
	std::string first;
	for (const auto &round : rounds)
		if (!round.contains("mlock_errno") || round["mlock_errno"] != 0) {
			if (!failed++)
				first = round.contains("mlock_errno") ? errno_name(round["mlock_errno"].get<int>())
								      : std::string("no mlock_errno");
		}
	if (failed)
		r.undecided("the race with an mlock batch", "mlock() failed in " + std::to_string(failed) + " of " +
								    std::to_string(rounds.size()) + " rounds (" + first + ")");
}

// A row that holds the buffer isolated: a round where the first
// registration did not (it returned first, or no migration isolated the
// pages) gave the second nothing to race with and decides nothing; the
// rounds that held it decide. Measured on the suite's 6.12 kernel's movable
// boot (run-mutants, mutant 0): one round of three held nothing, which
// failed the correct kernel's case when every round had to hold. No round
// held: the case decided nothing.
void judge_isolated(const race_case &c, const json &rounds, case_record &r)
{
	if (!holds_isolated(c) || rounds.empty())
		return;
	for (const auto &round : rounds)
		if (round.value("first_pin_held_isolated", false))
			return;
	r.undecided("no success in place while isolated",
		    "no round of " + std::to_string(rounds.size()) + " held the buffer's " + std::to_string(c.pages) +
			    " pages isolated in the first registration's migration (round 1: errno " +
			    std::to_string(rounds[0].at("errnos").at(0).get<int>()) + ")");
}

// A round whose pin succeeded with pages the probe could not place: none
// of those is known to have left restricted memory.
void judge_unplaced(const json &rounds, case_record &r)
{
	for (size_t i = 0; i < rounds.size(); i++) {
		const auto &round = rounds[i];
		const auto errnos = round.at("errnos").get<std::vector<int>>();
		const size_t unplaced = round.at("pages_unplaced");
		if (unplaced && std::count(errnos.begin(), errnos.end(), 0)) {
			r.undecided("no success in place", "round " + std::to_string(i + 1) + ": the probe cannot place " +
								   std::to_string(unplaced) + " of the buffer's pages");
			return;
		}
	}
}

void judge(const race_case &c, const std::optional<kernel_version> &, const json &observation, case_record &r)
{
	size_t successes = 0, refusals = 0, in_place_rounds = 0;
	const auto &rounds = observation.at("rounds");
	for (size_t i = 0; i < rounds.size(); i++) {
		const auto &round = rounds[i];
		size_t ok = 0;
		for (int e : round.at("errnos").get<std::vector<int>>())
			(e ? refusals : ok)++;
		successes += ok;
		const size_t left = round.at("pages_left_restricted");
		if (ok && left && !in_place_rounds++)
			r.add_reason("round " + std::to_string(i + 1) + ": " + std::to_string(ok) +
				     " pin(s) succeeded with " + std::to_string(left) + " of the buffer's " +
				     std::to_string(c.pages) + " pages still in " +
				     observation.value("placement", std::string("restricted")) +
				     " memory (a long-term pin succeeded in place)");
	}
	if (in_place_rounds) {
		r.outcome = verdict::fail;
		r.add_reason(std::to_string(in_place_rounds) + " of " + std::to_string(rounds.size()) +
			     " rounds so");
	}
	if (!successes && !in_place_rounds) {
		r.outcome = verdict::skip;
		r.add_reason("no racing pin succeeded in any round (all refused: ENOMEM is legal, but nothing "
			     "was left to check)");
	}
	judge_unplaced(rounds, r);
	judge_mlock(c, rounds, r);
	judge_isolated(c, rounds, r);
	if (rounds.size() != c.rounds) {
		r.outcome = verdict::error;
		r.add_reason(std::to_string(rounds.size()) + " of " + std::to_string(c.rounds) + " rounds ran");
	}
	r.observed = observation;
	(*r.observed)["successes"] = successes;
	(*r.observed)["refusals"] = refusals;
	(*r.observed)["rounds_in_place"] = in_place_rounds;
	(*r.observed)["summary"] = std::to_string(successes) + " pins ok, " + std::to_string(refusals) +
				   " refused, " + std::to_string(in_place_rounds) + " rounds in place";
}

void facts(const suite_options &, json &f) { f["cpus"] = sysconf(_SC_NPROCESSORS_ONLN); }

} // namespace

const suite_definition<race_case> definition = {
	.name = "race",
	.table = case_table,
	.needs = {.restricted_memory = true, .page_probe = true, .cma_filled = true},
	.run = run_case,
	.expects = expects,
	.judge = judge,
	.facts = facts,
};

} // namespace pinmatrix::race_cases
