// SPDX-License-Identifier: GPL-2.0
#include "ualink_case_kit.hpp"

#include <fcntl.h>
#include <grp.h>
#include <linux/dma-buf.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <random>
#include <stdexcept>
#include <system_error>

#include "byte_pattern.hpp"
#include "kernel_log.hpp"
#include "suite.hpp"
#include "sys_error.hpp"
#include "text.hpp"

namespace pinmatrix::ualink {

using nlohmann::json;

std::string us(int64_t ns)
{
	char buf[32];
	std::snprintf(buf, sizeof(buf), "%.1f us", double(ns) / 1000.0);
	return buf;
}

uint64_t random_u64()
{
	// Not std::random_device: getrandom() blocks until the crng is ready,
	// which in a fresh TCG guest takes seconds. Forged handles need no
	// secrecy, only variety.
	static std::mt19937_64 rng{uint64_t(monotonic_raw_ns()) ^ (uint64_t(getpid()) << 32)};
	return rng();
}

handle128 forged_handle(uint32_t accel_id)
{
	return {(random_u64() & ~AMDGPU_UALINK_HANDLE_ACCID_MASK_U64) | accel_id, random_u64()};
}

void dmabuf_sync(int fd, uint64_t flags)
{
	dma_buf_sync s{};
	s.flags = flags;
	while (ioctl(fd, DMA_BUF_IOCTL_SYNC, &s) && errno == EINTR)
		;
}

void cpu_bo::write(size_t offset, std::span<const std::byte> data)
{
	dmabuf_sync(dmabuf.get(), DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE);
	std::memcpy(map.bytes().data() + offset, data.data(), data.size());
	dmabuf_sync(dmabuf.get(), DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE);
}

std::vector<std::byte> cpu_bo::read(size_t offset, size_t n)
{
	dmabuf_sync(dmabuf.get(), DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ);
	std::vector<std::byte> out(map.bytes().begin() + long(offset), map.bytes().begin() + long(offset + n));
	dmabuf_sync(dmabuf.get(), DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ);
	return out;
}

cpu_bo make_cpu_bo(const accel &a, uint64_t size, uint32_t domains, uint64_t seed)
{
	cpu_bo bo;
	bo.gem = a.create_bo(size, domains);
	bo.dmabuf = a.prime_export(bo.gem.get());
	if (int rc = shared_map::try_map(bo.dmabuf.get(), size, 0, PROT_READ | PROT_WRITE, bo.map))
		throw sys_error(-rc, "mmap of the exporter's dma-buf on " + a.node());
	bo.write(0, pattern(seed, size));
	return bo;
}

std::string bytes_diff(const std::vector<std::byte> &want, const std::vector<std::byte> &got)
{
	if (want.size() != got.size())
		return std::to_string(got.size()) + " bytes";
	for (size_t i = 0; i < want.size(); i++)
		if (want[i] != got[i])
			return "differs at byte " + std::to_string(i);
	return "equal";
}

state_guard::~state_guard()
{
	try {
		a_.set_accel_state("active");
	} catch (...) {
	}
}

json counts(const drm_ualink_sim_pod_stats &s)
{
	return {{"bos", s.bos},	    {"remote_objects", s.remote_objects}, {"exports", s.exports},
		{"imports", s.imports}, {"pins", s.pins}};
}

// dma-buf releases run when the closing task returns to user space: give
// the counts a moment to settle.
json settled_counts(const accel &a, const json &want)
{
	json now;
	for (int i = 0; i < 100; i++) {
		now = counts(a.stats());
		if (now == want)
			break;
		usleep(10'000);
	}
	return now;
}

int kernel_alarms(std::string *first)
{
	std::string log;
	try {
		log = read_kernel_log();
	} catch (const std::system_error &e) {
		throw unmet_need(std::string("cannot read the kernel log: ") + e.what());
	}
	const auto found = pinmatrix::kernel_alarms(log);
	if (!found.empty() && first)
		*first = found.front();
	return int(found.size());
}

// ---------------------------------------------------------------------------
// The cases

namespace {

// In the child: body()'s result (or what it threw) as JSON on fd.
void send_result(const std::function<json()> &body, int fd)
{
	json out;
	try {
		out = {{"result", body()}};
	} catch (const std::exception &e) {
		out = {{"error", e.what()}};
	}
	const std::string text = out.dump();
	for (size_t off = 0; off < text.size();) {
		const ssize_t n = write(fd, text.data() + off, text.size() - off);
		if (n <= 0)
			_exit(3);
		off += size_t(n);
	}
}

// What fd gives until EOF, or nullopt at the deadline.
std::optional<std::string> read_all(int fd, int timeout_s)
{
	const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
	std::string text;
	for (;;) {
		const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
			deadline - std::chrono::steady_clock::now());
		if (left.count() <= 0)
			return std::nullopt;
		pollfd p{fd, POLLIN, 0};
		if (poll(&p, 1, int(left.count())) <= 0)
			continue;
		char buf[4096];
		const ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			return text;
		text.append(buf, size_t(n));
	}
}

} // namespace

json in_child_process(const std::function<json()> &body, int timeout_s)
{
	auto [pid, rd] = fork_piped([&](int fd) { send_result(body, fd); });
	const auto text = read_all(rd.get(), timeout_s);
	if (!text)
		kill(pid, SIGKILL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!text)
		throw std::runtime_error("child process still running after " + std::to_string(timeout_s) + " s: killed");
	json out;
	try {
		out = json::parse(*text);
	} catch (const json::exception &) {
		throw std::runtime_error("child process ended without a result (status " + std::to_string(status) + ")");
	}
	if (out.contains("error"))
		throw std::runtime_error("in the child process: " + out["error"].get<std::string>());
	return out.at("result");
}

void become_nobody()
{
	constexpr uid_t nobody = 65534;
	if (setgroups(0, nullptr))
		throw last_sys_error("setgroups");
	if (setresgid(nobody, nobody, nobody))
		throw last_sys_error("setresgid");
	if (setresuid(nobody, nobody, nobody))
		throw last_sys_error("setresuid");
}

} // namespace pinmatrix::ualink
