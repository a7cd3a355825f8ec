// SPDX-License-Identifier: GPL-2.0
#include "held_direct_write.hpp"

#include <fcntl.h>
#include <linux/dm-ioctl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernel_info.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

namespace {

constexpr size_t backing_bytes = size_t(1) << 20;

// A device-mapper ioctl on `name`: the header, then `payload` (a table).
int dm_call(int control, unsigned long request, const std::string &name, uint32_t flags,
	    const std::vector<char> &payload = {}, dm_ioctl *answer = nullptr)
{
	std::vector<char> buf(sizeof(dm_ioctl) + payload.size() + 16384);
	auto *io = reinterpret_cast<dm_ioctl *>(buf.data());
	io->version[0] = DM_VERSION_MAJOR;
	io->data_size = uint32_t(buf.size());
	io->data_start = sizeof(dm_ioctl);
	io->flags = flags;
	io->target_count = payload.empty() ? 0 : 1;
	std::snprintf(io->name, sizeof(io->name), "%s", name.c_str());
	std::memcpy(buf.data() + sizeof(dm_ioctl), payload.data(), payload.size());
	if (ioctl(control, request, io))
		return -errno;
	if (answer)
		*answer = *io;
	return 0;
}

// One linear target over the whole loop device.
std::vector<char> linear_table(dev_t loop)
{
	const std::string params = std::to_string(major(loop)) + ":" + std::to_string(minor(loop)) + " 0";
	std::vector<char> t(sizeof(dm_target_spec) + ((params.size() + 8) & ~size_t(7)));
	auto *spec = reinterpret_cast<dm_target_spec *>(t.data());
	spec->sector_start = 0;
	spec->length = backing_bytes / 512;
	std::snprintf(spec->target_type, sizeof(spec->target_type), "linear");
	std::memcpy(t.data() + sizeof(dm_target_spec), params.c_str(), params.size() + 1);
	return t;
}

unique_fd open_control(const char *path, const char *what)
{
	unique_fd fd(::open(path, O_RDWR | O_CLOEXEC));
	if (!fd)
		throw unmet_need(std::string("no ") + path + " (" + what + "): " + errno_text(errno));
	return fd;
}

} // namespace

int held_direct_write::make_target(std::string &why)
{
	unique_fd loop_control = open_control("/dev/loop-control", "loop not loaded: modprobe loop; CONFIG_BLK_DEV_LOOP");
	control_ = open_control("/dev/mapper/control", "device-mapper not loaded: modprobe dm_mod; CONFIG_BLK_DEV_DM");
	memfd_ = unique_fd(memfd_create("pinmatrix-held-write", MFD_CLOEXEC));
	const int n = ioctl(loop_control.get(), LOOP_CTL_GET_FREE);
	if (!memfd_ || ftruncate(memfd_.get(), off_t(backing_bytes)) || n < 0) {
		why = "memfd or LOOP_CTL_GET_FREE: " + errno_text(errno);
		return -errno;
	}
	loop_ = unique_fd(::open(("/dev/loop" + std::to_string(n)).c_str(), O_RDWR | O_CLOEXEC));
	struct stat st{};
	if (!loop_ || ioctl(loop_.get(), LOOP_SET_FD, memfd_.get()) || fstat(loop_.get(), &st)) {
		why = "loop device " + std::to_string(n) + ": " + errno_text(errno);
		return -errno;
	}
	name_ = "pinmatrix-held-write-" + std::to_string(getpid());
	dm_ioctl created{};
	int ret = dm_call(control_.get(), DM_DEV_CREATE, name_, 0, {}, &created);
	created_ = !ret;
	if (!ret)
		ret = dm_call(control_.get(), DM_TABLE_LOAD, name_, 0, linear_table(st.st_rdev));
	if (!ret)
		ret = dm_call(control_.get(), DM_DEV_SUSPEND, name_, 0);	// activate the table
	if (!ret)
		target_ = unique_fd(::open(("/dev/dm-" + std::to_string(minor(created.dev))).c_str(),
					   O_WRONLY | O_DIRECT | O_CLOEXEC));
	if (!ret && !target_)
		ret = -errno;
	if (!ret)
		ret = dm_call(control_.get(), DM_DEV_SUSPEND, name_, DM_SUSPEND_FLAG);
	suspended_ = !ret;
	if (ret)
		why = "device-mapper target " + name_ + ": " + errno_text(-ret);
	return ret;
}

// The write, in a thread of its own: it sleeps in the kernel (state D)
// with its bio deferred by the suspended target, its pages held.
int held_direct_write::start_write(void *addr, size_t length, std::string &why)
{
	writer_ = std::thread([this, addr, length] {
		writer_tid_ = gettid();
		if (pwrite(target_.get(), addr, length, 0) < 0)
			std::perror("pinmatrix: the held direct write");
	});
	const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
	while (std::chrono::steady_clock::now() < until) {
		if (const pid_t tid = writer_tid_; tid) {
			const std::string stat = read_text_file("/proc/self/task/" + std::to_string(tid) + "/stat");
			const size_t close = stat.rfind(')');
			if (close != std::string::npos && stat.size() > close + 2 && stat[close + 2] == 'D')
				return 0;
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(2));
	}
	why = "the direct write to the suspended target did not sleep in the kernel within 5 s";
	return -ETIMEDOUT;
}

int held_direct_write::take(void *addr, size_t length, std::shared_ptr<held_direct_write> &out, std::string &why)
{
	std::shared_ptr<held_direct_write> h(new held_direct_write);
	int ret = h->make_target(why);
	if (!ret)
		ret = h->start_write(addr, length, why);
	if (!ret)
		out = std::move(h);
	return ret;
}

held_direct_write::~held_direct_write()
{
	if (suspended_)
		dm_call(control_.get(), DM_DEV_SUSPEND, name_, 0);
	if (writer_.joinable())
		writer_.join();
	target_.reset();
	if (created_)
		dm_call(control_.get(), DM_DEV_REMOVE, name_, 0);
	if (loop_)
		ioctl(loop_.get(), LOOP_CLR_FD);
}

} // namespace pinmatrix
