// SPDX-License-Identifier: GPL-2.0
// The test module's pin (PINMATRIX_IOC_PIN + UNPIN) by size and placement,
// with and without FOLL_LONGTERM: the cost of the placement contract
// without the RDMA stack around it.

#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>

#include "bench_env.hpp"

namespace pinmatrix::bench {

namespace {

// pin/<contract>/<placement>/<bytes>: a fresh mapping per iteration
// (populated and probed untimed); timed: the PIN ioctl (pin_user_pages_fast,
// with FOLL_LONGTERM migrating movable and CMA pages first) and UNPIN. The
// PFN array the module fills is allocated once, outside the timed region.
void bm_pin(benchmark::State &state, pinmatrix_contract contract, placement p)
{
	env &e = env::get();
	if (!e.module()) {
		state.SkipWithError(("no test module: " + e.module_why()).c_str());
		return;
	}
	const size_t bytes = size_t(state.range(0));
	const bool longterm = contract == PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM;
	if (auto why = e.make_room(p, bytes, longterm && !traits(p).longterm_pinnable); !why.empty()) {
		state.SkipWithError(why.c_str());
		return;
	}
	const int fd = e.module()->fd();
	std::vector<uint64_t> pfns(bytes / page_size());
	int64_t total_ns = 0;
	double in_placement = 0;
	size_t pages = 0;
	for (auto _ : state) {
		auto fresh = fresh_or_skip(state, *e.module(), p, bytes);
		if (!fresh)
			break;
		const fresh_pages &f = *fresh;
		pages = f.pages;
		pinmatrix_pin pin{};
		pin.size = sizeof(pin);
		pin.contract = contract;
		pin.flags = PINMATRIX_PIN_WRITE;
		pin.addr = f.map.addr();
		pin.npages = f.pages;
		pin.pfns = reinterpret_cast<uintptr_t>(pfns.data());
		pinmatrix_unpin unpin{};
		unpin.size = sizeof(unpin);
		const int64_t t0 = time_ns();
		const int rc = ::ioctl(fd, PINMATRIX_IOC_PIN, &pin);
		const int err = errno;
		if (!rc) {
			unpin.id = pin.id;
			::ioctl(fd, PINMATRIX_IOC_UNPIN, &unpin);
		}
		const int64_t t1 = time_ns();
		if (rc) {
			state.SkipWithError(("PINMATRIX_IOC_PIN " + std::string(contract_name(contract)) + " of " +
					     size_label(bytes) + ": " + std::strerror(err))
						    .c_str());
			break;
		}
		state.SetIterationTime(double(t1 - t0) * 1e-9);
		total_ns += t1 - t0;
		in_placement += f.in_placement;
	}
	set_pin_counters(state, total_ns, in_placement, pages);
}

} // namespace

void register_module_pin(placement p)
{
	for (auto [contract, label] : {std::pair{PINMATRIX_CONTRACT_FOLL_PIN, "foll_pin"},
				       std::pair{PINMATRIX_CONTRACT_FOLL_PIN_LONGTERM, "foll_pin_longterm"}})
		register_sized("pin/" + std::string(label) + "/" + std::string(name(p)), pinning_sizes(),
			       [contract, p](benchmark::State &state) { bm_pin(state, contract, p); });
}

} // namespace pinmatrix::bench
