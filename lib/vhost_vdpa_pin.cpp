// SPDX-License-Identifier: GPL-2.0
#include "vhost_vdpa_pin.hpp"

#include <fcntl.h>
// virtio_ring.h's legacy vring_init() is C that C++ refuses; nothing here uses it.
#define VIRTIO_RING_NO_LEGACY
#include <linux/vhost.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <vector>

#include "clock.hpp"
#include "kernel_info.hpp"
#include "sys_error.hpp"
#include "verbs.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> vhost_vdpa_devices()
{
	std::vector<fs::path> found;
	for (const auto &e : fs::directory_iterator("/dev"))
		if (e.path().filename().string().starts_with("vhost-vdpa-"))
			found.push_back(e.path());
	std::sort(found.begin(), found.end());
	return found;
}

// Why there is no /dev/vhost-vdpa-*, as the machine shows it.
std::string why_no_device()
{
	const std::string sim = module_state("vdpa_sim_net", "drivers/vdpa/vdpa_sim");
	const std::string vhost = module_state("vhost_vdpa", "drivers/vhost");
	if (sim == "not built")
		return "no vDPA simulator (CONFIG_VDPA_SIM_NET not set: no vdpa_sim_net module for this kernel)";
	if (vhost == "not built")
		return "no vhost-vdpa (CONFIG_VHOST_VDPA not set: no vhost_vdpa module for this kernel)";
	if (sim != "loaded" || vhost != "loaded")
		return "no /dev/vhost-vdpa-* (vdpa_sim_net " + sim + ", vhost_vdpa " + vhost +
		       "; `modprobe vdpa_sim_net vhost_vdpa`)";
	return "no /dev/vhost-vdpa-*: no vDPA device was added (`vdpa dev add mgmtdev vdpasim_net name NAME`)";
}

// vdpa_sim maps by virtual address where its use_va parameter says so
// (added after 6.1; 6.1's simulator always maps by physical address).
bool maps_by_virtual_address()
{
	const std::string use_va = read_text_file("/sys/module/vdpa_sim/parameters/use_va");
	return use_va.starts_with("Y") || use_va.starts_with("1");
}

int write_iotlb(int fd, uint64_t iova, uint64_t size, uint64_t uaddr, uint8_t type)
{
	vhost_msg_v2 msg{};
	msg.type = VHOST_IOTLB_MSG_V2;
	msg.iotlb.iova = iova;
	msg.iotlb.size = size;
	msg.iotlb.uaddr = uaddr;
	msg.iotlb.perm = VHOST_ACCESS_RW;
	msg.iotlb.type = type;
	return ::write(fd, &msg, sizeof(msg)) == ssize_t(sizeof(msg)) ? 0 : errno;
}

} // namespace

vhost_vdpa_pin vhost_vdpa_pin::open()
{
	const auto devices = vhost_vdpa_devices();
	if (devices.empty())
		throw unmet_need(why_no_device());
	if (maps_by_virtual_address())
		throw unmet_need("vdpa_sim maps by virtual address (use_va=Y): vhost-vdpa pins nothing then "
				 "(load it with use_va=0)");
	vhost_vdpa_pin p;
	p.device_ = devices.front().string();
	p.fd_ = unique_fd(::open(p.device_.c_str(), O_RDWR | O_CLOEXEC));
	if (!p.fd_)
		throw unmet_need("open " + p.device_ + ": " + errno_text(errno));
	if (ioctl(p.fd_.get(), VHOST_SET_OWNER))
		throw unmet_need("VHOST_SET_OWNER on " + p.device_ + ": " + errno_text(errno));
	uint64_t features = 0;
	if (ioctl(p.fd_.get(), VHOST_GET_BACKEND_FEATURES, &features) ||
	    !(features & (1ULL << VHOST_BACKEND_F_IOTLB_MSG_V2)))
		throw unmet_need(p.device_ + " offers no IOTLB messages v2 (VHOST_GET_BACKEND_FEATURES)");
	features = 1ULL << VHOST_BACKEND_F_IOTLB_MSG_V2;
	if (ioctl(p.fd_.get(), VHOST_SET_BACKEND_FEATURES, &features))
		throw unmet_need("VHOST_SET_BACKEND_FEATURES on " + p.device_ + ": " + errno_text(errno));
	return p;
}

int vhost_vdpa_pin::map(void *addr, size_t length, uint64_t iova, int64_t *latency_ns)
{
	unmap();
	const int64_t t0 = monotonic_raw_ns();
	const int err = write_iotlb(fd_.get(), iova, length, reinterpret_cast<uintptr_t>(addr), VHOST_IOTLB_UPDATE);
	if (latency_ns)
		*latency_ns = monotonic_raw_ns() - t0;
	if (!err) {
		iova_ = iova;
		length_ = length;
	}
	return err;
}

void vhost_vdpa_pin::unmap()
{
	if (!length_)
		return;
	write_iotlb(fd_.get(), iova_, length_, 0, VHOST_IOTLB_INVALIDATE);
	length_ = 0;
}

} // namespace pinmatrix
