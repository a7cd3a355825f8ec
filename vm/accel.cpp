// SPDX-License-Identifier: GPL-2.0
#include "accel.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>

#include "atomic_file.hpp"
#include "kernel_info.hpp"
#include "report_input.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The host's boot: a KVM that fails now may work after a reboot (another
// kernel, another module).
std::string host_boot_id()
{
	std::ifstream in("/proc/sys/kernel/random/boot_id");
	std::string id;
	std::getline(in, id);
	return id.empty() ? "unknown-boot" : id;
}

fs::path failure_file(const fs::path &cache, const std::string &kvm_cpu)
{
	return cache / "accel" / ("kvm-failed-" + host_boot_id() + "-cpu-" + kvm_cpu + ".json");
}

// "" when the device opens read-write, else why not.
std::string kvm_unusable(const fs::path &device)
{
	const int fd = ::open(device.c_str(), O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return device.string() + ": " + std::strerror(errno);
	::close(fd);
	return "";
}

} // namespace

void check_kvm_cpu(const std::string &kvm_cpu)
{
	const bool ok = !kvm_cpu.empty() && kvm_cpu.size() <= 200 &&
			std::all_of(kvm_cpu.begin(), kvm_cpu.end(), [](unsigned char c) {
				return std::isalnum(c) || std::strchr("_.,+-=", c);
			});
	if (!ok)
		throw usage_error("--kvm-cpu '" + report::one_line(kvm_cpu) +
				  "': a QEMU CPU model (host, max, qemu64,+pdpe1gb): letters, digits and _.,+-= only");
}

json kvm_failure_on_record(const fs::path &cache, const std::string &kvm_cpu)
{
	try {
		const fs::path f = failure_file(cache, kvm_cpu);
		if (!fs::is_regular_file(f))
			return nullptr;
		json j = json::parse(read_text_file(f.string()));
		return j.is_object() && j.contains("why") ? j : json(nullptr);
	} catch (const std::exception &) {
		return nullptr;	// unreadable: KVM is tried again
	}
}

json remember_kvm_failure(const fs::path &cache, const std::string &kvm_cpu, const std::string &why,
			  const std::string &guest_kernel)
{
	const json record = {{"why", why},
			     {"kvm_cpu", kvm_cpu},
			     {"guest_kernel", guest_kernel},
			     {"at", static_cast<long long>(std::time(nullptr))}};
	std::error_code ec;
	fs::create_directories(cache / "accel", ec);
	try {
		write_file_atomically(failure_file(cache, kvm_cpu), record.dump(2) + "\n");
	} catch (const std::exception &) {
		// Not remembered: the next guest tries KVM again, no worse.
	}
	return record;
}

accel_choice choose_accel(const std::string &asked, const fs::path &cache, const std::string &kvm_cpu,
			  const fs::path &kvm_device)
{
	if (asked == "tcg")
		return {"tcg", false, nullptr};
	if (asked == "kvm")
		return {"kvm", false, nullptr};
	if (const std::string why = kvm_unusable(kvm_device); !why.empty())
		return {"tcg", false, {{"tried", "kvm"}, {"why", why}, {"earlier", false}}};
	if (json seen = kvm_failure_on_record(cache, kvm_cpu); !seen.is_null())
		return {"tcg", false,
			{{"tried", "kvm"},
			 {"why", seen["why"].get<std::string>() + " (an earlier guest in this host boot; " +
					 failure_file(cache, kvm_cpu).string() + ")"},
			 {"earlier", true}}};
	return {"kvm", true, nullptr};
}

} // namespace pinmatrix
