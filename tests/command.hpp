// SPDX-License-Identifier: GPL-2.0
#pragma once

// Runs the built pinmatrix binary the way a user does, for the tests.

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace pinmatrix::test {

struct command_result {
	int exit_code = -1;
	std::string output; // stdout, and stderr unless it went elsewhere
};

// Runs a shell command line; its stdout (and whatever it redirects there)
// comes back.
inline command_result run_shell(const std::string &cmd)
{
	command_result r;
	FILE *p = popen(cmd.c_str(), "r");
	if (!p)
		return r;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		r.output.append(buf, n);
	int status = pclose(p);
	r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	return r;
}

// stderr_to: where stderr goes (a shell redirection's target); with
// stdout, by default.
inline command_result run_pinmatrix(const std::string &args, const std::string &stderr_to = "&1")
{
	return run_shell(std::string(PINMATRIX_BIN) + " " + args + " 2>" + stderr_to);
}

} // namespace pinmatrix::test
