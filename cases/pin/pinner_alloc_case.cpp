// SPDX-License-Identifier: GPL-2.0
// A first pinner that allocates the page it pins (cudaHostAlloc): the page
// is wherever the driver put it; the rule table's expectation then follows
// from that observed placement and the driver's observed contract
// (cases/pin/pin_judge.cpp). The driver frees what it allocated together with its
// pin, so a failed second pin has no recovery step.

#include <cstring>
#include <random>
#include <vector>

#include "first_pin.hpp"
#include "mapping.hpp"
#include "pin_case.hpp"
#include "placement.hpp"

namespace pinmatrix {

observation run_pinner_alloc_case(const case_def &c, const case_tools &tools, second_pinner &second)
{
	const size_t ps = page_size();
	observation obs;
	first_pin_holder first;
	if (int ret = first_pin_holder::try_allocate(c.first, ps, first, &obs.first_pin_detail)) {
		obs.first_pin_errno = -ret;
		return obs;
	}
	obs.first_pinner = first.pinner();
	obs.longterm_by_version = first.longterm_by_version();
	auto *page = static_cast<std::byte *>(first.data());
	const auto addr = reinterpret_cast<uintptr_t>(page);

	std::mt19937_64 gen(std::random_device{}());
	const uint64_t seed = gen();
	for (size_t i = 0; i + 8 <= ps; i += 8) {
		uint64_t v = gen();
		std::memcpy(page + i, &v, 8);
	}
	std::vector<std::byte> written(page, page + ps);
	const auto areas = read_cma_areas();
	auto state = [&] { return describe(tools.probe.probe_page(addr), areas); };
	// The allocation is pinned already: before and after the first pin are
	// the same page, where the driver chose to put it.
	obs.before = state();
	obs.after_first_pin = obs.before;

	second_pin_result reg = second.take(page, ps);
	obs.registration_errno = reg.err;
	obs.latency_ns = reg.latency_ns;
	obs.after_registration = state();
	obs.readback_method = second.readback_method();
	if (!reg.err) {
		second.readback(page, ps, seed, obs.rdma_write_readback, obs.rdma_detail);
		second.release();
		return obs;
	}
	obs.content_intact = !std::memcmp(page, written.data(), ps);
	return obs;
}

} // namespace pinmatrix
