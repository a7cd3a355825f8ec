// SPDX-License-Identifier: GPL-2.0
#include "pin_case.hpp"

#include <chrono>
#include <cstring>
#include <random>

#include "first_pin.hpp"
#include "placement.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

page_state describe(const pinmatrix_page &page, const std::vector<cma_area> &areas)
{
	page_state s;
	s.cma_area = cma_area_of(areas, page.pfn);
	s.pfn = page.pfn;
	auto p = classify(page);
	s.placement = p ? std::string(name(*p)) : "absent";
	s.zone = zone_name(page.zone);
	s.migratetype = migratetype_name(page.migratetype);
	s.longterm_pinnable = page.flags & PINMATRIX_PAGE_LONGTERM_PINNABLE;
	s.maybe_dma_pinned = page.flags & PINMATRIX_PAGE_MAYBE_DMA_PINNED;
	s.refcount = page.refcount;
	return s;
}

namespace {

void fill_pattern(std::byte *p, size_t n, uint64_t seed)
{
	std::mt19937_64 gen(seed);
	for (size_t i = 0; i + 8 <= n; i += 8) {
		uint64_t v = gen();
		std::memcpy(p + i, &v, 8);
	}
}

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

} // namespace

observation run_pin_case(const case_def &c, const pin_module &module, const verbs_device &dev,
			 size_t find_budget_bytes)
{
	const size_t ps = page_size();
	auto found = find_page(module, c.where, find_budget_bytes);
	if (!found)
		throw unmet_need("no page in " + std::string(name(c.where)) + " memory within " +
				 std::to_string(find_budget_bytes >> 20) + " MiB (" +
				 placement_hint(c.where) + ")");
	mapping &page = found->map;
	void *addr = page.data();

	observation obs;
	obs.scanned_bytes = found->scanned_bytes;
	const uint64_t seed = std::random_device{}();
	fill_pattern(page.data(), ps, seed);
	std::vector<std::byte> written(page.data(), page.data() + ps);
	const auto areas = read_cma_areas();
	auto state = [&] { return describe(module.probe_one(page.addr()), areas); };
	obs.before = state();

	first_pin_holder first;
	if (int ret = first_pin_holder::try_take(c.first, module, addr, ps, first)) {
		obs.first_pin_errno = -ret;
		return obs;
	}
	obs.first_pin_pfns = first.pfns();
	obs.after_first_pin = state();

	registration reg = register_memory(dev, addr, ps);
	obs.registration_errno = reg.err;
	obs.latency_ns = reg.latency_ns;
	obs.after_registration = state();

	if (reg.mr) {
		// The device writes through its translation; the CPU reads through
		// its page tables. After a migration both must name the new page.
		mapping source = populated_pages(ps);
		fill_pattern(source.data(), ps, seed + 1);
		registration src = register_memory(dev, source.data(), ps);
		if (!src.mr) {
			obs.rdma_write_readback = false;
			obs.rdma_detail = "source registration " + errno_name(src.err);
			return obs;
		}
		try {
			auto qp = loopback_qp::create(dev);
			int ret = qp.rdma_write(src.mr.get(), source.data(), ps, page.addr(),
						reg.mr->rkey, std::chrono::seconds(5));
			if (ret) {
				obs.rdma_write_readback = false;
				obs.rdma_detail = "RDMA WRITE " + errno_name(-ret);
				if (ret == -EIO)
					obs.rdma_detail += std::string(", ") +
							   ibv_wc_status_str(ibv_wc_status(qp.last_wc_status()));
			} else {
				bool same = !std::memcmp(page.data(), source.data(), ps);
				obs.rdma_write_readback = same;
				obs.rdma_detail = same ? "4096 bytes written by the device, read back by the CPU"
						       : "CPU read differs from what the device wrote";
			}
		} catch (const std::exception &e) {
			obs.rdma_write_readback = false;
			obs.rdma_detail = e.what();
		}
		return obs;
	}

	// The failed registration must leave the page as it was, and must
	// succeed once the first pin is gone.
	obs.content_intact = !std::memcmp(page.data(), written.data(), ps);
	first.release();
	registration again = register_memory(dev, addr, ps);
	obs.recovery = recovery_record{again.err, again.latency_ns,
				       module.probe_one(page.addr()).pfn};
	return obs;
}

} // namespace pinmatrix
