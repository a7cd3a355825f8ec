// SPDX-License-Identifier: GPL-2.0
#include "pin_balance.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "kernel_info.hpp"
#include "unique_fd.hpp"

namespace pinmatrix {

std::optional<int64_t> foll_pins_held()
{
	if (unique_fd fd(::open("/proc/sys/vm/stat_refresh", O_WRONLY | O_CLOEXEC)); fd)
		(void)!::write(fd.get(), "1", 1);
	auto v = read_vmstat();
	const auto acquired = v.find("nr_foll_pin_acquired"), released = v.find("nr_foll_pin_released");
	if (acquired == v.end() || released == v.end())
		return std::nullopt;
	return int64_t(acquired->second) - int64_t(released->second);
}

bool quiet_machine()
{
	const char *v = std::getenv("PINMATRIX_QUIET_MACHINE");
	return v && !std::strcmp(v, "1");
}

void pin_balance::before_case()
{
	const auto now = read_();
	base_ = now && level_ ? std::min(*now, *level_) : now;
}

void pin_balance::after_case(case_record &r)
{
	if (!base_)
		return;
	const auto start = std::chrono::steady_clock::now();
	auto now = read_();
	while (now && *now > *base_ && std::chrono::steady_clock::now() - start < grace_) {
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
		now = read_();
	}
	if (!now)
		return;
	level_ = now;
	const int64_t kept = *now - *base_;
	r.details["pin_balance"] = {{"held_before", *base_}, {"held_after", *now}, {"kept", std::max<int64_t>(kept, 0)}};
	if (kept <= 0)
		return;
	const std::string what = "the case left " + std::to_string(kept) + " FOLL_PIN pin" + (kept == 1 ? "" : "s") +
				 " behind: nr_foll_pin_acquired - nr_foll_pin_released was " + std::to_string(*base_) +
				 " before it and " + std::to_string(*now) + " " + std::to_string(grace_.count()) +
				 " ms after its process ended";
	if (!decides_) {
		r.details["pin_balance"]["decides"] = false;
		r.add_reason(what + " (not judged: other processes on this machine pin too; "
				    "PINMATRIX_QUIET_MACHINE=1 where none does)");
		return;
	}
	if (r.outcome == verdict::pass || r.outcome == verdict::skip)
		r.outcome = verdict::fail;
	r.add_reason(what);
}

} // namespace pinmatrix
