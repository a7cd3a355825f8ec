// SPDX-License-Identifier: GPL-2.0
#pragma once

// What the UALink case bodies share (cases/ualink/ualink_*_cases.cpp): the
// domains and sizes they use, forged handles, an exporter's BO with a CPU
// view, the model's counts and the kernel's alarms. Not for the runner.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "child_process.hpp"
#include "ualink_cases.hpp"
#include "ualink_device.hpp"

namespace pinmatrix::ualink {

constexpr uint32_t vram = AMDGPU_GEM_DOMAIN_VRAM;
constexpr uint32_t gtt = AMDGPU_GEM_DOMAIN_GTT;
constexpr uint64_t bo_size = 64 << 10;

std::string us(int64_t ns);	// "12.3 us"
uint64_t random_u64();
// A handle nobody exported: random, with the given accelerator id.
handle128 forged_handle(uint32_t accel_id);
// dma-buf CPU access brackets (DMA_BUF_IOCTL_SYNC), as any dma-buf user must.
void dmabuf_sync(int fd, uint64_t flags);

// An exporter's BO with a CPU view through its own (PRIME) dma-buf.
struct cpu_bo {
	gem_handle gem;
	unique_fd dmabuf;
	shared_map map;

	void write(size_t offset, std::span<const std::byte> data);
	std::vector<std::byte> read(size_t offset, size_t n);
};
cpu_bo make_cpu_bo(const accel &a, uint64_t size, uint32_t domains, uint64_t seed);

// "equal", "differs at byte N", "N bytes".
std::string bytes_diff(const std::vector<std::byte> &want, const std::vector<std::byte> &got);

// Restores "active" however the case ends (the suite also does, between
// cases, should a case die with an accelerator offline).
class state_guard {
public:
	state_guard(const accel &a, const std::string &state) : a_(a) { a_.set_accel_state(state); }
	state_guard(const state_guard &) = delete;
	state_guard &operator=(const state_guard &) = delete;
	~state_guard();

private:
	const accel &a_;
};

// The model's counts that must come back to where a case started.
nlohmann::json counts(const drm_ualink_sim_pod_stats &s);
// dma-buf releases run when the closing task returns to user space: the
// counts after they settled to want, or as they are after a second.
nlohmann::json settled_counts(const accel &a, const nlohmann::json &want);
// The kernel's alarm lines (kernel_log.hpp) in its log now; the first in *first.
int kernel_alarms(std::string *first = nullptr);

// body() in a child process of its own (another process, another uid):
// what it returned. std::runtime_error when it threw, died or took longer
// than timeout_s (then killed).
nlohmann::json in_child_process(const std::function<nlohmann::json()> &body, int timeout_s);

// This process as uid and gid nobody with no supplementary groups: no
// capability left at all (a root-opened DRM file it keeps stays usable, as
// a privilege-separating daemon's would). Throws sys_error.
void become_nobody();

} // namespace pinmatrix::ualink
