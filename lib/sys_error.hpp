// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cerrno>
#include <string>
#include <system_error>

namespace pinmatrix {

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
