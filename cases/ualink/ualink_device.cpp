// SPDX-License-Identifier: GPL-2.0
#include "ualink_device.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xf86drm.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "clock.hpp"
#include "sys_error.hpp"

namespace pinmatrix::ualink {

namespace fs = std::filesystem;

namespace {

const char *const faults_path = "/sys/kernel/debug/" UALINK_SIM_DRIVER_NAME "/faults";
const char *const npa_path = "/sys/kernel/debug/" UALINK_SIM_DRIVER_NAME "/npa";

std::string read_line(const fs::path &p)
{
	std::ifstream in(p);
	std::string s;
	std::getline(in, s);
	return s;
}

std::vector<uint32_t> read_ids(const fs::path &p)
{
	std::istringstream in(read_line(p));
	std::vector<uint32_t> ids;
	for (uint32_t id; in >> id;)
		ids.push_back(id);
	return ids;
}

void write_text(const fs::path &p, const std::string &text)
{
	unique_fd fd(::open(p.c_str(), O_WRONLY | O_CLOEXEC));
	if (!fd)
		throw last_sys_error("open " + p.string());
	if (::write(fd.get(), text.data(), text.size()) != ssize_t(text.size()))
		throw last_sys_error("write '" + text + "' to " + p.string());
}

int drm_rc(int rc)
{
	return rc ? -errno : 0;
}

std::string driver_name(int fd)
{
	drmVersionPtr v = drmGetVersion(fd);
	if (!v)
		return {};
	std::string name(v->name, size_t(v->name_len));
	drmFreeVersion(v);
	return name;
}

} // namespace

std::string to_string(const handle128 &h)
{
	char buf[48];
	std::snprintf(buf, sizeof(buf), "0x%016llx:0x%016llx", (unsigned long long)h.hi,
		      (unsigned long long)h.lo);
	return buf;
}

// gem_handle

gem_handle::gem_handle(gem_handle &&o) noexcept
	: fd_(std::exchange(o.fd_, -1)), handle_(std::exchange(o.handle_, 0))
{
}

gem_handle &gem_handle::operator=(gem_handle &&o) noexcept
{
	if (this != &o) {
		reset();
		fd_ = std::exchange(o.fd_, -1);
		handle_ = std::exchange(o.handle_, 0);
	}
	return *this;
}

void gem_handle::reset()
{
	if (handle_ && fd_ >= 0) {
		drm_gem_close arg{};
		arg.handle = handle_;
		drmIoctl(fd_, DRM_IOCTL_GEM_CLOSE, &arg);
	}
	handle_ = 0;
	fd_ = -1;
}

// shared_map

int shared_map::try_map(int fd, size_t length, off_t offset, int prot, shared_map &out)
{
	void *p = ::mmap(nullptr, length, prot, MAP_SHARED, fd, offset);
	if (p == MAP_FAILED)
		return -errno;
	out = shared_map();
	out.base_ = static_cast<std::byte *>(p);
	out.length_ = length;
	return 0;
}

shared_map::shared_map(shared_map &&o) noexcept
	: base_(std::exchange(o.base_, nullptr)), length_(std::exchange(o.length_, 0))
{
}

shared_map &shared_map::operator=(shared_map &&o) noexcept
{
	if (this != &o) {
		if (base_)
			::munmap(base_, length_);
		base_ = std::exchange(o.base_, nullptr);
		length_ = std::exchange(o.length_, 0);
	}
	return *this;
}

shared_map::~shared_map()
{
	if (base_)
		::munmap(base_, length_);
}

// accel

std::optional<accel> accel::open(const std::string &node, std::string *why)
{
	auto no = [&](const std::string &reason) -> std::optional<accel> {
		if (why)
			*why = node + ": " + reason;
		return std::nullopt;
	};
	unique_fd fd(::open(node.c_str(), O_RDWR | O_CLOEXEC));
	if (!fd)
		return no(std::string("cannot open: ") + strerror(errno));
	const std::string driver = driver_name(fd.get());
	driver_kind kind;
	if (driver == "amdgpu")
		kind = driver_kind::amdgpu;
	else if (driver == UALINK_SIM_DRIVER_NAME)
		kind = driver_kind::model;
	else
		return no("driver '" + driver + "'");
	const fs::path sysfs = fs::path("/sys/class/drm") / fs::path(node).filename() / "device/ualink";
	if (!fs::exists(sysfs / "accel_id"))
		return no(driver + " without UALink (no " + (sysfs / "accel_id").string() +
			  ": a kernel without the UALink series?)");
	accel a;
	a.node_ = node;
	a.driver_ = driver;
	a.kind_ = kind;
	a.sysfs_ = sysfs;
	a.id_ = uint32_t(std::stoul(read_line(sysfs / "accel_id")));
	a.fd_ = std::move(fd);
	return a;
}

accel accel::open_sibling(const std::string &node) const
{
	unique_fd fd(::open(node.c_str(), O_RDWR | O_CLOEXEC));
	if (!fd)
		throw last_sys_error("open " + node);
	accel a;
	a.node_ = node;
	a.driver_ = driver_;
	a.kind_ = kind_;
	a.sysfs_ = sysfs_;
	a.id_ = id_;
	a.fd_ = std::move(fd);
	return a;
}

accel accel::reopen() const
{
	return open_sibling(node_);
}

accel accel::open_primary() const
{
	// <device>/drm/ lists the device's nodes (drmGetDevice2 cannot tell the
	// model's devices apart: they have no bus of their own).
	const fs::path nodes = sysfs_.parent_path() / "drm";
	std::error_code ec;
	for (const auto &e : fs::directory_iterator(nodes, ec)) {
		const std::string name = e.path().filename().string();
		if (name.rfind("card", 0) == 0)
			return open_sibling("/dev/dri/" + name);
	}
	throw unmet_need(node_ + " has no primary node (nothing named card* in " + nodes.string() + ")");
}

bool accel::become_master() const
{
	return drmIsMaster(fd_.get()) || drmSetMaster(fd_.get()) == 0;
}

int accel::try_authenticate(const accel &master) const
{
	drm_magic_t magic = 0;
	if (const int rc = drmGetMagic(fd_.get(), &magic))
		return rc < 0 ? rc : -EINVAL;
	const int rc = drmAuthMagic(master.fd(), magic);
	return rc < 0 ? rc : (rc ? -EINVAL : 0);
}

std::string accel::accel_state() const
{
	return read_line(sysfs_ / "accel_state");
}

std::vector<uint32_t> accel::local_accels() const
{
	return read_ids(sysfs_ / "local_accels");
}

std::vector<uint32_t> accel::pod_members() const
{
	return read_ids(sysfs_ / "vpod_active_accels");
}

int accel::ualink_ioctl(drm_amdgpu_ualink_handle &arg) const
{
	return drm_rc(drmIoctl(fd(), DRM_IOCTL_AMDGPU_UALINK_HANDLE, &arg));
}

drm_amdgpu_ualink_handle export_request(uint32_t gem, uint32_t flags)
{
	drm_amdgpu_ualink_handle arg{};
	arg.in.op = DRM_AMDGPU_UALINK_HANDLE_OP_EXPORT;
	arg.in.flags = flags;
	arg.in.gem_handle = gem;
	return arg;
}

drm_amdgpu_ualink_handle import_request(const handle128 &h, uint32_t flags)
{
	drm_amdgpu_ualink_handle arg{};
	arg.in.op = DRM_AMDGPU_UALINK_HANDLE_OP_IMPORT;
	arg.in.flags = flags;
	arg.in.import_ualink_handle[0] = h.lo;
	arg.in.import_ualink_handle[1] = h.hi;
	return arg;
}

int accel::try_export(uint32_t gem, handle128 &out, uint32_t flags) const
{
	drm_amdgpu_ualink_handle arg = export_request(gem, flags);
	const int rc = ualink_ioctl(arg);
	if (!rc)
		out = {arg.out.export_ualink_handle[0], arg.out.export_ualink_handle[1]};
	return rc;
}

handle128 accel::export_bo(uint32_t gem) const
{
	handle128 h;
	if (int rc = try_export(gem, h))
		throw sys_error(-rc, "UALink export of GEM handle " + std::to_string(gem) + " on " + node_);
	return h;
}

int accel::try_import(const handle128 &h, unique_fd &dmabuf, uint32_t flags) const
{
	drm_amdgpu_ualink_handle arg = import_request(h, flags);
	const int rc = ualink_ioctl(arg);
	if (!rc)
		dmabuf.reset(int(arg.out.import_dmabuf_handle));
	return rc;
}

unique_fd accel::import(const handle128 &h) const
{
	unique_fd fd;
	if (int rc = try_import(h, fd))
		throw sys_error(-rc, "UALink import of " + to_string(h) + " on " + node_);
	return fd;
}

int accel::try_create_bo(uint64_t size, uint32_t domains, gem_handle &out) const
{
	uint32_t handle = 0;
	int rc;
	if (kind_ == driver_kind::amdgpu) {
		rc = amdgpu_try_create_bo(fd(), size, domains, handle);
	} else {
		drm_ualink_sim_gem_create arg{};
		arg.size = size;
		arg.domains = domains;
		rc = drm_rc(drmIoctl(fd(), DRM_IOCTL_UALINK_SIM_GEM_CREATE, &arg));
		handle = arg.handle;
	}
	if (!rc)
		out = gem_handle(fd(), handle);
	return rc;
}

gem_handle accel::create_bo(uint64_t size, uint32_t domains) const
{
	gem_handle h;
	if (int rc = try_create_bo(size, domains, h))
		throw sys_error(-rc, "create BO of " + std::to_string(size) + " bytes on " + node_);
	return h;
}

int accel::try_prime_to_handle(int dmabuf_fd, uint32_t &handle) const
{
	return drm_rc(drmPrimeFDToHandle(fd(), dmabuf_fd, &handle));
}

gem_handle accel::prime_to_handle(int dmabuf_fd) const
{
	uint32_t handle = 0;
	if (int rc = try_prime_to_handle(dmabuf_fd, handle))
		throw sys_error(-rc, "drmPrimeFDToHandle on " + node_);
	return gem_handle(fd(), handle);
}

unique_fd accel::prime_export(uint32_t gem) const
{
	int out = -1;
	if (drmPrimeHandleToFD(fd(), gem, DRM_CLOEXEC | DRM_RDWR, &out))
		throw last_sys_error("drmPrimeHandleToFD on " + node_);
	return unique_fd(out);
}

void accel::gem_close(uint32_t gem) const
{
	drm_gem_close arg{};
	arg.handle = gem;
	drmIoctl(fd(), DRM_IOCTL_GEM_CLOSE, &arg);
}

void accel::require_model(const char *what) const
{
	if (kind_ != driver_kind::model)
		throw unmet_need(std::string("needs the reference model's ") + what + " (" + driver_ +
				 " has no such hook)");
}

void accel::set_accel_state(const std::string &state) const
{
	require_model("writable accel_state (node offline knob)");
	write_text(sysfs_ / "accel_state", state);
}

void accel::reset_node() const
{
	require_model("node reset knob");
	write_text(sysfs_ / "reset", "1");
}

int accel::try_info(uint32_t gem, drm_ualink_sim_gem_info &out) const
{
	require_model("GEM_INFO (pins, revocation)");
	out = {};
	out.handle = gem;
	return drm_rc(drmIoctl(fd(), DRM_IOCTL_UALINK_SIM_GEM_INFO, &out));
}

drm_ualink_sim_gem_info accel::info(uint32_t gem) const
{
	drm_ualink_sim_gem_info i;
	if (int rc = try_info(gem, i))
		throw sys_error(-rc, "GEM_INFO on " + node_);
	return i;
}

int accel::try_evict(uint32_t gem) const
{
	require_model("eviction");
	drm_ualink_sim_gem_evict arg{};
	arg.handle = gem;
	return drm_rc(drmIoctl(fd(), DRM_IOCTL_UALINK_SIM_GEM_EVICT, &arg));
}

int accel::try_remote_access(uint32_t gem, bool write, uint64_t offset,
			     std::span<std::byte> data) const
{
	require_model("remote load/store over the fabric");
	drm_ualink_sim_remote_access arg{};
	arg.handle = gem;
	arg.op = write ? UALINK_SIM_ACCESS_WRITE : UALINK_SIM_ACCESS_READ;
	arg.offset = offset;
	arg.size = data.size();
	arg.data = reinterpret_cast<uintptr_t>(data.data());
	return drm_rc(drmIoctl(fd(), DRM_IOCTL_UALINK_SIM_REMOTE_ACCESS, &arg));
}

int accel::try_gem_mmap_offset(uint32_t gem, uint64_t &offset) const
{
	require_model("GEM mmap offset");
	drm_ualink_sim_gem_mmap arg{};
	arg.handle = gem;
	const int rc = drm_rc(drmIoctl(fd(), DRM_IOCTL_UALINK_SIM_GEM_MMAP, &arg));
	offset = arg.offset;
	return rc;
}

drm_ualink_sim_pod_stats accel::stats() const
{
	require_model("object counts");
	drm_ualink_sim_pod_stats s{};
	if (drmIoctl(fd(), DRM_IOCTL_UALINK_SIM_POD_STATS, &s))
		throw last_sys_error("POD_STATS on " + node_);
	return s;
}

// discovery

discovery discover()
{
	discovery d;
	std::map<std::string, bool> nodes;	// render node -> seen by drmGetDevices2

	drmDevicePtr devs[64];
	const int n = drmGetDevices2(0, devs, 64);
	for (int i = 0; i < n; i++) {
		if (devs[i]->available_nodes & (1 << DRM_NODE_RENDER))
			nodes[devs[i]->nodes[DRM_NODE_RENDER]] = true;
	}
	if (n > 0)
		drmFreeDevices(devs, n);
	const size_t by_libdrm = nodes.size();

	std::error_code ec;
	for (const auto &e : fs::directory_iterator("/dev/dri", ec))
		if (e.path().filename().string().rfind("renderD", 0) == 0)
			nodes.emplace(e.path().string(), false);

	size_t scanned_only = 0;
	for (const auto &[node, listed] : nodes) {
		std::string why;
		if (auto a = accel::open(node, &why)) {
			scanned_only += !listed;
			d.accels.push_back(std::move(*a));
		} else {
			d.skipped.push_back(why);
		}
	}
	std::sort(d.accels.begin(), d.accels.end(),
		  [](const accel &a, const accel &b) { return a.id() < b.id(); });
	d.method = "drmGetDevices2 (" + std::to_string(by_libdrm) + " render nodes)";
	if (scanned_only)
		d.method += " + /dev/dri/renderD* scan with drmGetVersion (" +
			    std::to_string(scanned_only) +
			    " accelerators libdrm folded away: platform devices without "
			    "device-tree data compare equal)";
	return d;
}

std::optional<uint64_t> model_faults()
{
	std::ifstream in(faults_path);
	std::string s;
	if (!(in >> s))
		return std::nullopt;
	return uint64_t(std::stoull(s, nullptr, 16));
}

void set_model_faults(uint64_t mask)
{
	char buf[24];
	std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(mask));
	write_text(faults_path, buf);
}

std::vector<std::pair<uint64_t, uint64_t>> model_npa_ranges()
{
	std::ifstream in(npa_path);
	if (!in)
		throw unmet_need(std::string("cannot read ") + npa_path + " (debugfs, root)");
	std::vector<std::pair<uint64_t, uint64_t>> out;
	for (std::string line; std::getline(in, line);) {
		unsigned imp = 0, exp = 0;
		unsigned long long npa = 0, size = 0;
		if (std::sscanf(line.c_str(), "importer %u exporter %u npa %llx size %llx", &imp, &exp,
				&npa, &size) == 4)
			out.emplace_back(npa, npa + size);
	}
	return out;
}

file_identity identify(int fd)
{
	struct stat st;
	if (fstat(fd, &st))
		throw last_sys_error("fstat");
	return {uint64_t(st.st_dev), uint64_t(st.st_ino)};
}

bool is_dmabuf(int fd)
{
	// dma-buf fds show their exporter in fdinfo.
	std::ifstream in("/proc/self/fdinfo/" + std::to_string(fd));
	for (std::string line; std::getline(in, line);)
		if (line.rfind("exp_name:", 0) == 0)
			return true;
	return false;
}

} // namespace pinmatrix::ualink
