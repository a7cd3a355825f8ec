// SPDX-License-Identifier: GPL-2.0
#include "pin_case.hpp"

#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <utility>

#include "byte_pattern.hpp"
#include "first_pin.hpp"
#include "give_back.hpp"
#include "placement.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

page_state describe(const pinmatrix_page &page, const std::vector<cma_area> &areas)
{
	page_state s;
	s.cma_area = cma_area_of(areas, page);
	s.pfn = page.pfn;
	s.placement = placement_of(page);
	s.zone = zone_name(page.zone);
	s.migratetype = migratetype_name(page.migratetype);
	s.longterm_pinnable = longterm_pinnable(page);
	s.maybe_dma_pinned = page.flags & PINMATRIX_PAGE_MAYBE_DMA_PINNED;
	s.refcount = page.refcount;
	return s;
}

namespace {

std::string placement_hint(placement p)
{
	switch (p) {
	case placement::movable:
		return "boot with movablecore= (ZONE_MOVABLE)";
	case placement::cma:
		return "needs CONFIG_CMA and cma= or hugetlb_cma=";
	case placement::ordinary:
		return "memory is all movable or CMA";
	}
	return "";
}

// Fresh pages for the repeats: one populated chunk, its pages in the
// case's placement taken in turn (the suite steered fresh pages there).
constexpr size_t repeat_chunk_bytes = 1 << 20;

constexpr auto pin_release_grace = std::chrono::seconds(2);

// The page once every pin of the case is released. A pinner may let go a
// moment after its release returns (io_uring frees a buffer once its last
// request is gone): a pin still there after pin_release_grace is one that
// outlived its release.
template <typename read_state>
page_state once_released(read_state &state)
{
	const auto until = std::chrono::steady_clock::now() + pin_release_grace;
	page_state s = state();
	while (s.maybe_dma_pinned && std::chrono::steady_clock::now() < until) {
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
		s = state();
	}
	return s;
}

} // namespace

page_wish pin_page_wish(placement where)
{
	return {where, where == placement::movable ? memory_can_go_back : nullptr};
}

// On each fresh page the same first pin, the second pin, both released. A
// repeat that ended otherwise than the case (another errno) is named, not
// timed in.
void time_registration_again(const case_def &c, const case_tools &tools, second_pinner &second, int samples,
			     observation &obs)
{
	if (samples < 2 || obs.first_pin_errno || traits(c.first).allocates)
		return;
	const size_t ps = page_size();
	mapping chunk = populated_pages(repeat_chunk_bytes);
	const auto pages = tools.probe.probe_pages(chunk.addr(), chunk.size() / ps);
	obs.latency_samples_ns = {obs.latency_ns};
	int repeats = samples - 1;
	for (size_t i = 0; i < pages.size() && repeats > 0; i++) {
		if (classify(pages[i]) != c.where)
			continue;
		void *addr = chunk.data() + i * ps;
		first_pin_holder first;
		if (first_pin_holder::try_take(c.first, tools.module, addr, ps, first))
			return;
		const second_pin_result reg = second.take(addr, ps);
		if (!reg.err)
			second.release();
		first.release();
		repeats--;
		if (reg.err == obs.registration_errno)
			obs.latency_samples_ns.push_back(reg.latency_ns);
		else
			obs.latency_repeats_otherwise.push_back(errno_name(reg.err));
	}
}

namespace {

// What the steps of one pin case share: its page, its observation, and the
// clock each step is marked on as it ends.
struct pin_case_steps {
	const case_def &c;
	const case_tools &tools;
	second_pinner &second;
	step_clock &clock;
	mapping &page;
	std::vector<cma_area> areas = read_cma_areas();
	observation obs;

	void done(const char *step)
	{
		clock.mark(step);
		obs.time_ms = clock.steps();
	}
	page_state state() const { return describe(tools.probe.probe_page(page.addr()), areas); }
	page_state state_once_released() const
	{
		auto read = [this] { return state(); };
		return once_released(read);
	}
	// The harm (lib/give_back.hpp), for a page in restricted memory.
	std::optional<give_back_attempt> ask_back(give_back_patience patience) const
	{
		if (obs.before.longterm_pinnable != false)
			return std::nullopt;
		return give_back_memory(obs.before.pfn, obs.before.placement, patience);
	}
};

// The registration held: a write through it read back, both pins
// released, the memory asked back again.
void after_registration(pin_case_steps &s, first_pin_holder &first, uint64_t seed)
{
	const size_t ps = page_size();
	s.second.readback(s.page.data(), ps, seed, s.obs.rdma_write_readback, s.obs.rdma_detail);
	s.done("write and read back through the pin");
	s.second.release();
	first.release();
	s.obs.after_release = s.state_once_released();
	s.done("release, until no pin shows");
	s.obs.give_back_control = s.ask_back(expecting_return);
	s.done("give-back, all released");
}

// The registration was refused: it must leave the page as it was, and must
// succeed once the first pin is gone.
void after_refusal(pin_case_steps &s, first_pin_holder &first, const std::vector<std::byte> &written)
{
	const size_t ps = page_size();
	s.obs.content_intact = !std::memcmp(s.page.data(), written.data(), ps);
	first.release();
	s.obs.give_back_released = s.ask_back(expecting_return);
	s.done("give-back, first pin released");
	second_pin_result again = s.second.take(s.page.data(), ps);
	s.obs.recovery = recovery_record{again.err, again.latency_ns, s.tools.probe.probe_page(s.page.addr()).pfn};
	s.done("registration again");
	s.second.release();
	s.obs.after_release = s.state_once_released();
	s.done("release, until no pin shows");
	s.obs.give_back_control = s.ask_back(expecting_return);
	s.done("give-back, all released");
}

} // namespace

observation run_pin_case(const case_def &c, const case_tools &tools, second_pinner &second,
			 size_t find_budget_bytes, step_clock &clock)
{
	if (traits(c.first).allocates)
		return run_pinner_alloc_case(c, tools, second);
	const size_t ps = page_size();
	auto found = find_page(tools.probe, pin_page_wish(c.where), find_budget_bytes);
	if (!found)
		no_page_found(c.where, find_budget_bytes, "page", placement_hint(c.where));
	pin_case_steps s{c, tools, second, clock, found->map};
	s.done("find the page");
	observation &obs = s.obs;
	obs.probe = tools.probe.probe_name();
	obs.scanned_bytes = found->scanned_bytes;
	const uint64_t seed = std::random_device{}();
	fill_pattern(s.page.data(), ps, seed);
	const std::vector<std::byte> written(s.page.data(), s.page.data() + ps);
	obs.before = s.state();
	s.done("fill and read the page");

	first_pin_holder first;
	if (int ret = first_pin_holder::try_take(c.first, tools.module, s.page.data(), ps, first,
						 &obs.first_pin_detail)) {
		obs.first_pin_errno = -ret;
		return std::move(obs);
	}
	obs.first_pin_pfns = first.pfns();
	obs.first_pinner = first.pinner();
	obs.longterm_by_version = first.longterm_by_version();
	obs.after_first_pin = s.state();
	s.done("first pin");

	const second_pin_result reg = second.take(s.page.data(), ps);
	obs.registration_errno = reg.err;
	obs.latency_ns = reg.latency_ns;
	obs.after_registration = s.state();
	s.done("registration");
	obs.readback_method = second.readback_method();
	// The first pin is expected to strand the page where the row says
	// ENOMEM: that refusal is taken as soon as failed migrations prove it.
	const bool refusal_expected = c.row && c.row->expected == pin_outcome::enomem;
	obs.give_back_held = s.ask_back(refusal_expected ? expecting_refusal : expecting_return);
	s.done("give-back, pins held");
	if (reg.err)
		after_refusal(s, first, written);
	else
		after_registration(s, first, seed + 1);
	return std::move(obs);
}

} // namespace pinmatrix
