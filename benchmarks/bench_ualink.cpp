// SPDX-License-Identifier: GPL-2.0
// UALink export and import latency (DRM_IOCTL_AMDGPU_UALINK_HANDLE) against
// the reference model ualink_sim, or amdgpu where the kernel carries the
// series.

#include <optional>

#include "bench_env.hpp"
#include "ualink/ualink_cases.hpp"
#include "ualink/ualink_device.hpp"

namespace pinmatrix::bench {

namespace {

using ualink::accel;
using ualink::gem_handle;
using ualink::handle128;

// The pod, found once (discovery opens every render node).
const ualink::pod_view *pod(benchmark::State &state, bool need_remote)
{
	static std::optional<ualink::pod_view> found;
	static std::string why;
	if (!found && why.empty()) {
		try {
			found.emplace(ualink::pod_view{ualink::discover()});
			found->exporter();
		} catch (const std::exception &e) {
			found.reset();
			why = e.what();
		}
	}
	if (!found) {
		state.SkipWithError(why.c_str());
		return nullptr;
	}
	try {
		if (found->exporter().accel_state() != "active") {
			state.SkipWithError(("accelerator " + found->exporter().node() + " is " +
					     found->exporter().accel_state() + ", not active")
						    .c_str());
			return nullptr;
		}
		if (need_remote)
			found->remote();
	} catch (const std::exception &e) {
		state.SkipWithError(e.what());
		return nullptr;
	}
	return &*found;
}

// ualink/export/<bytes>: a new VRAM BO per iteration (created untimed: a
// BO's handle is made once, later exports return it); timed: its first
// export.
void bm_export(benchmark::State &state)
{
	const auto *p = pod(state, false);
	if (!p)
		return;
	const accel &a = p->exporter();
	const uint64_t bytes = uint64_t(state.range(0));
	for (auto _ : state) {
		gem_handle bo;
		if (int rc = a.try_create_bo(bytes, AMDGPU_GEM_DOMAIN_VRAM, bo)) {
			state.SkipWithError(("create BO: errno " + std::to_string(-rc)).c_str());
			break;
		}
		handle128 h;
		const int64_t t0 = time_ns();
		const int rc = a.try_export(bo.get(), h);
		const int64_t t1 = time_ns();
		if (rc) {
			state.SkipWithError(("export: errno " + std::to_string(-rc)).c_str());
			break;
		}
		state.SetIterationTime(double(t1 - t0) * 1e-9);
	}
}

// ualink/import/<bytes>: per iteration a new BO exported on one accelerator
// (untimed); timed: its first import on an accelerator of another node (the
// model pins the exporter's BO for the importer). The dma-buf and the BO go
// after the timed region.
void bm_import(benchmark::State &state)
{
	const auto *p = pod(state, true);
	if (!p)
		return;
	const accel &a = p->exporter();
	const accel &b = p->remote();
	const uint64_t bytes = uint64_t(state.range(0));
	for (auto _ : state) {
		gem_handle bo;
		if (int rc = a.try_create_bo(bytes, AMDGPU_GEM_DOMAIN_VRAM, bo)) {
			state.SkipWithError(("create BO: errno " + std::to_string(-rc)).c_str());
			break;
		}
		handle128 h;
		if (int rc = a.try_export(bo.get(), h)) {
			state.SkipWithError(("export: errno " + std::to_string(-rc)).c_str());
			break;
		}
		unique_fd dmabuf;
		const int64_t t0 = time_ns();
		const int rc = b.try_import(h, dmabuf);
		const int64_t t1 = time_ns();
		if (rc) {
			state.SkipWithError(("import: errno " + std::to_string(-rc)).c_str());
			break;
		}
		state.SetIterationTime(double(t1 - t0) * 1e-9);
	}
}

} // namespace

void register_ualink()
{
	using fn = void (*)(benchmark::State &);
	for (auto [label, bm] : {std::pair<const char *, fn>{"ualink/export", bm_export},
				 std::pair<const char *, fn>{"ualink/import", bm_import}})
		register_sized(label, {64 << 10, 1 << 20, 16 << 20}, bm);
}

} // namespace pinmatrix::bench
