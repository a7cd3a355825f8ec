// SPDX-License-Identifier: GPL-2.0
// kselftest's anchor for a long-term pin: gup_test's PIN_LONGTERM_BENCHMARK
// (/sys/kernel/debug/gup_test, CONFIG_GUP_TEST), by size and placement, the
// same sizes and fresh pages as the module's pin (bench_pin.cpp), so that
// the report can set the two side by side (reports/bench_report.cpp).

#include <optional>
#include <string>

#include "bench_env.hpp"
#include "gup_test_pin.hpp"
#include "sys_error.hpp"

namespace pinmatrix::bench {

namespace {

// gup_test/pin_longterm/<placement>/<bytes>: a fresh mapping per iteration
// (populated and probed untimed), as the module's pin; timed: the ioctl,
// which pins the whole buffer in one pin_user_pages(FOLL_LONGTERM) call
// (migrating movable and CMA pages first) and unpins it. Counters as the
// module's pin, and `left_placement`: the share of the pages no longer in
// the placement afterwards, which a long-term pin of restricted memory
// must make 1.
void bm_gup_test(benchmark::State &state, placement p)
{
	env &e = env::get();
	if (!e.module()) {
		state.SkipWithError(("no test module (it probes the placements): " + e.module_why()).c_str());
		return;
	}
	std::optional<gup_test_pin> gup;
	try {
		gup.emplace(gup_test_pin::open());
	} catch (const unmet_need &missing) {
		state.SkipWithError(missing.what());
		return;
	}
	const size_t bytes = size_t(state.range(0));
	if (auto why = e.make_room(p, bytes, !traits(p).longterm_pinnable); !why.empty()) {
		state.SkipWithError(why.c_str());
		return;
	}
	int64_t total_ns = 0, kernel_pin_us = 0;
	double in_placement = 0, left = 0;
	size_t pages = 0;
	for (auto _ : state) {
		auto fresh = fresh_or_skip(state, *e.module(), p, bytes);
		if (!fresh)
			break;
		const fresh_pages &f = *fresh;
		pages = f.pages;
		const int64_t t0 = time_ns();
		const gup_test_pin_result pin = gup->pin_longterm(f.map.data(), bytes, uint32_t(f.pages));
		const int64_t t1 = time_ns();
		if (pin.err || pin.pinned_bytes != bytes) {
			state.SkipWithError(("PIN_LONGTERM_BENCHMARK of " + size_label(bytes) + ": " +
					     (pin.err ? errno_text(pin.err) +
								(pin.err == EINVAL ? " (this kernel's struct gup_test differs)" : "")
						      : "pinned " + std::to_string(pin.pinned_bytes) + " bytes, then refused"))
						    .c_str());
			break;
		}
		state.SetIterationTime(double(t1 - t0) * 1e-9);
		total_ns += t1 - t0;
		kernel_pin_us += int64_t(pin.pin_us);
		in_placement += f.in_placement;
		left += 1 - share_in(*e.module(), f.map, p);
	}
	set_pin_counters(state, total_ns, in_placement, pages);
	if (const auto n = state.iterations(); n && pages) {
		state.counters["kernel_pin_ns_per_page"] = double(kernel_pin_us) * 1e3 / (double(n) * double(pages));
		state.counters["left_placement"] = left / double(n);
	}
}

} // namespace

void register_gup_test(placement p)
{
	register_sized("gup_test/pin_longterm/" + std::string(name(p)), pinning_sizes(),
		       [p](benchmark::State &state) { bm_gup_test(state, p); });
}

} // namespace pinmatrix::bench
