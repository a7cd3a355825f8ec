// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

namespace pinmatrix {

// The three ways an errno is written, each in one place:
// errno_symbol: "ENOMEM" ("errno 4242" for a number without a name);
// errno_name:   "ENOMEM (12)", and "ok" for 0 (what records and reports show);
// errno_text:   "ENOMEM (Cannot allocate memory)" (messages for people).
inline std::string errno_symbol(int err)
{
	const char *n = strerrorname_np(err);
	return n ? n : "errno " + std::to_string(err);
}

inline std::string errno_name(int err)
{
	if (!err)
		return "ok";
	const char *n = strerrorname_np(err);
	return std::string(n ? n : "errno") + " (" + std::to_string(err) + ")";
}

inline std::string errno_text(int err)
{
	const char *n = strerrorname_np(err);
	return std::string(n ? n : "errno") + " (" + strerror(err) + ")";
}

// A failed system call, with the errno that decides skip versus fail.
inline std::system_error sys_error(int err, const std::string &what)
{
	return std::system_error(err, std::generic_category(), what);
}

inline std::system_error last_sys_error(const std::string &what)
{
	return sys_error(errno, what);
}

// A precondition this machine does not meet: the case is a SKIP, not a FAIL.
struct unmet_need : std::runtime_error {
	using std::runtime_error::runtime_error;
};

// Bad input from the user (arguments, files): exit code 2.
struct usage_error : std::runtime_error {
	using std::runtime_error::runtime_error;
};

} // namespace pinmatrix
