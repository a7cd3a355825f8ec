// SPDX-License-Identifier: GPL-2.0
#pragma once

// The accelerators the UALink cases talk to: amdgpu render nodes whose
// kernel carries the UALink series, or the reference model (ualink_sim, a
// test double for amdgpu). Everything goes through real libdrm (drmIoctl,
// drmPrimeFDToHandle, drmGetDevices2) and amdgpu's ioctl layout
// (kmod/uapi/amdgpu_ualink.h).
//
// IGT style: try_*() returns 0 or -errno; the same name without try_ throws
// (std::system_error) so a case states what must work in one line. Every fd,
// GEM handle and mapping is owned by an RAII object.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "amdgpu_ualink.h"
#include "ualink_sim.h"
#include "clock.hpp"
#include "unique_fd.hpp"

namespace pinmatrix::ualink {

struct handle128 {
	uint64_t lo = 0;	// export_ualink_handle[0]: bits 9:0 the accel id
	uint64_t hi = 0;	// export_ualink_handle[1]
	bool operator==(const handle128 &) const = default;
	uint32_t accel_id() const { return uint32_t(lo & AMDGPU_UALINK_HANDLE_ACCID_MASK_U64); }
};
std::string to_string(const handle128 &h);	// "0x<hi>:0x<lo>"

// The ioctl's argument for an export of gem, or an import of h, as a
// caller fills it in (everything else 0).
drm_amdgpu_ualink_handle export_request(uint32_t gem, uint32_t flags = 0);
drm_amdgpu_ualink_handle import_request(const handle128 &h, uint32_t flags = 0);

enum class driver_kind { amdgpu, model };

// One GEM handle in one DRM file; DRM_IOCTL_GEM_CLOSE when it goes.
class gem_handle {
public:
	gem_handle() = default;
	gem_handle(int drm_fd, uint32_t handle) : fd_(drm_fd), handle_(handle) {}
	gem_handle(gem_handle &&o) noexcept;
	gem_handle &operator=(gem_handle &&o) noexcept;
	gem_handle(const gem_handle &) = delete;
	gem_handle &operator=(const gem_handle &) = delete;
	~gem_handle() { reset(); }

	uint32_t get() const { return handle_; }
	explicit operator bool() const { return handle_ != 0; }
	void reset();

private:
	int fd_ = -1;
	uint32_t handle_ = 0;
};

// A shared mapping of a dma-buf or DRM fd, unmapped when it goes.
class shared_map {
public:
	shared_map() = default;
	// Returns 0 or -errno; on success *out owns the mapping.
	static int try_map(int fd, size_t length, off_t offset, int prot, shared_map &out);
	shared_map(shared_map &&o) noexcept;
	shared_map &operator=(shared_map &&o) noexcept;
	shared_map(const shared_map &) = delete;
	shared_map &operator=(const shared_map &) = delete;
	~shared_map();

	std::span<std::byte> bytes() const { return {base_, length_}; }

private:
	std::byte *base_ = nullptr;
	size_t length_ = 0;
};

class accel {
public:
	// Opens a render node; nullopt when it is not a UALink accelerator
	// (*why says what it is instead).
	static std::optional<accel> open(const std::string &node, std::string *why = nullptr);

	accel(accel &&) = default;
	accel &operator=(accel &&) = default;

	const std::string &node() const { return node_; }
	const std::string &driver() const { return driver_; }
	driver_kind kind() const { return kind_; }
	bool is_model() const { return kind_ == driver_kind::model; }
	uint32_t id() const { return id_; }
	int fd() const { return fd_.get(); }
	// <dev>/ualink: accel_id, accel_state, local_accels, vpod_active_accels
	const std::filesystem::path &sysfs() const { return sysfs_; }
	// Another DRM file on the same accelerator.
	accel reopen() const;
	// A DRM file on the same accelerator's primary node (/dev/dri/cardN, the
	// card* beside its render node in sysfs): DRM_AUTH applies there, not on
	// the render node. unmet_need when the device has none.
	accel open_primary() const;
	// On a primary node: whether this file is the DRM master, or became it
	// (drmSetMaster); false while another file holds it.
	bool become_master() const;
	// drmGetMagic on this file, drmAuthMagic on master's: 0 or -errno.
	int try_authenticate(const accel &master) const;

	std::string accel_state() const;
	std::vector<uint32_t> local_accels() const;
	std::vector<uint32_t> pod_members() const;

	// DRM_IOCTL_AMDGPU_UALINK_HANDLE as is: 0 or -errno, arg in and out.
	int ualink_ioctl(drm_amdgpu_ualink_handle &arg) const;
	int try_export(uint32_t gem, handle128 &out, uint32_t flags = 0) const;
	handle128 export_bo(uint32_t gem) const;
	int try_import(const handle128 &h, pinmatrix::unique_fd &dmabuf, uint32_t flags = 0) const;
	pinmatrix::unique_fd import(const handle128 &h) const;

	// Buffers: VRAM- or GTT-preferring (AMDGPU_GEM_DOMAIN_*), CPU accessible.
	int try_create_bo(uint64_t size, uint32_t domains, gem_handle &out) const;
	gem_handle create_bo(uint64_t size, uint32_t domains) const;
	int try_prime_to_handle(int dmabuf_fd, uint32_t &handle) const;
	gem_handle prime_to_handle(int dmabuf_fd) const;
	pinmatrix::unique_fd prime_export(uint32_t gem) const;
	void gem_close(uint32_t gem) const;

	// Model hooks: throw unmet_need on amdgpu.
	void require_model(const char *what) const;
	void set_accel_state(const std::string &state) const;
	void reset_node() const;
	int try_info(uint32_t gem, drm_ualink_sim_gem_info &out) const;
	drm_ualink_sim_gem_info info(uint32_t gem) const;
	int try_evict(uint32_t gem) const;
	int try_remote_access(uint32_t gem, bool write, uint64_t offset,
			      std::span<std::byte> data) const;
	int try_gem_mmap_offset(uint32_t gem, uint64_t &offset) const;
	drm_ualink_sim_pod_stats stats() const;

private:
	accel() = default;
	accel open_sibling(const std::string &node) const;	// node: of this accelerator
	std::string node_, driver_;
	driver_kind kind_ = driver_kind::model;
	uint32_t id_ = 0;
	std::filesystem::path sysfs_;
	pinmatrix::unique_fd fd_;
};

// amdgpu's GEM_CREATE (ualink_amdgpu.cpp, the only user of amdgpu_drm.h).
int amdgpu_try_create_bo(int fd, uint64_t size, uint32_t domains, uint32_t &handle);

struct discovery {
	std::vector<accel> accels;	// sorted by accel id
	std::string method;		// how they were found
	std::vector<std::string> skipped;	// render nodes that are not UALink accelerators
};

// Every render node whose driver is amdgpu or ualink_sim and that has
// <dev>/ualink/accel_id. drmGetDevices2() first; libdrm folds platform
// devices without device-tree data into one entry, so /dev/dri/renderD* is
// scanned as well (drmGetVersion names the driver).
discovery discover();

// Model-wide state outside ioctls (debugfs): root only.
std::optional<uint64_t> model_faults();
void set_model_faults(uint64_t mask);
// [start, end) of every live NPA range the model's kernel side knows.
std::vector<std::pair<uint64_t, uint64_t>> model_npa_ranges();

// The dma-buf an fd refers to (its inode), to tell "the same object".
struct file_identity {
	uint64_t dev = 0, ino = 0;
	bool operator==(const file_identity &) const = default;
};
file_identity identify(int fd);
bool is_dmabuf(int fd);

} // namespace pinmatrix::ualink
