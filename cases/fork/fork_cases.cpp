// SPDX-License-Identifier: GPL-2.0
#include "fork_cases.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <stdexcept>

#include "byte_pattern.hpp"
#include "mapping.hpp"
#include "common/second_pin.hpp"
#include "sys_error.hpp"
#include "unique_fd.hpp"

namespace pinmatrix::fork_cases {

using nlohmann::json;

// The table.

namespace {

const std::vector<fork_case> table = {
	{"child-writes-private",
	 "the child writes its view of the registered page: the parent's page is unchanged, the device's "
	 "write through the parent's pin is what the parent's CPU reads, and the child still sees its own "
	 "write",
	 true, 'O', 'C'},
	{"device-write-stays-in-parent",
	 "the child only reads: the device's write through the parent's pin is what the parent's CPU reads, "
	 "and the child still sees the page as it was at fork",
	 false, 'O', 'O'},
};

// What a view of the page holds: 'O' as at fork, 'C' the child's write,
// 'D' the device's write, '?' none of them.
char view_of(const std::byte *page, size_t length, uint64_t seed)
{
	std::vector<std::byte> want(length);
	for (auto [mark, s] : {std::pair{'O', seed}, std::pair{'C', seed + 1}, std::pair{'D', seed + 2}}) {
		fill_pattern(want.data(), length, s);
		if (!std::memcmp(page, want.data(), length))
			return mark;
	}
	return '?';
}

} // namespace

const std::vector<fork_case> &case_table() { return table; }

// The body.

namespace {

// The child: optionally writes its view, says "ready", waits for "go",
// says what its view holds, exits.
[[noreturn]] void child(const fork_case &c, std::byte *page, size_t length, uint64_t seed, int to_parent,
			int from_parent)
{
	if (c.child_writes)
		fill_pattern(page, length, seed + 1);
	char b = 'r';
	if (::write(to_parent, &b, 1) != 1 || ::read(from_parent, &b, 1) != 1)
		_exit(2);
	b = view_of(page, length, seed);
	_exit(::write(to_parent, &b, 1) == 1 ? 0 : 2);
}

struct pipe_pair {
	unique_fd read_end, write_end;
	static pipe_pair make()
	{
		int fds[2];
		if (pipe2(fds, O_CLOEXEC))
			throw last_sys_error("pipe2");
		return {unique_fd(fds[0]), unique_fd(fds[1])};
	}
};

char read_byte(int fd)
{
	char b = 0;
	return ::read(fd, &b, 1) == 1 ? b : 0;
}

} // namespace

json run_case(const fork_case &c, const suite_options &opt)
{
	auto second = open_second_pinner(opt.pins.second_pin, opt.device);
	const size_t ps = page_size();
	mapping page = mapping::anonymous(ps, true);
	const uint64_t seed = std::random_device{}();
	fill_pattern(page.data(), ps, seed);
	json o = {{"second_pin", second->name()}, {"readback_method", second->readback_method()}};
	const second_pin_result reg = second->take(page.data(), ps);
	o["errno"] = reg.err;
	if (reg.err)
		return {{"observation", o}};
	pipe_pair up = pipe_pair::make(), down = pipe_pair::make();
	const pid_t pid = ::fork();
	if (pid < 0)
		throw last_sys_error("fork");
	if (pid == 0)
		child(c, page.data(), ps, seed, up.write_end.get(), down.read_end.get());
	up.write_end.reset();
	down.read_end.reset();
	o["child_ready"] = read_byte(up.read_end.get()) == 'r';
	o["parent_view_after_child"] = std::string(1, view_of(page.data(), ps, seed));
	std::optional<bool> same;
	std::string detail;
	second->readback(page.data(), ps, seed + 2, same, detail);
	o["device_cpu_agree"] = same.value_or(false);
	o["device_detail"] = detail;
	const char go = 'g';
	const bool sent = ::write(down.write_end.get(), &go, 1) == 1;
	const char seen = sent ? read_byte(up.read_end.get()) : 0;
	o["child_view_after_device_write"] = seen ? std::string(1, seen) : std::string("(no answer)");
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	o["child_exit"] = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	second->release();
	return {{"observation", o}};
}

// The judge.

namespace {

struct check {
	std::string what, want, got;
};

std::vector<check> checks_of(const fork_case &c, const json &o)
{
	auto text = [&](const char *key) { return o.contains(key) ? o[key].dump() : std::string("(none)"); };
	return {
		{"registration errno", "0", text("errno")},
		{"the parent's view after the child ran", "\"" + std::string(1, c.parent_sees) + "\"",
		 text("parent_view_after_child")},
		{"device write read back by the parent's CPU", "true", text("device_cpu_agree")},
		{"the child's view after the device write", "\"" + std::string(1, c.child_sees) + "\"",
		 text("child_view_after_device_write")},
		{"child exit", "0", text("child_exit")},
	};
}

std::string expected_summary(const fork_case &c)
{
	return std::string("parent: ") + (c.parent_sees == 'O' ? "as at fork" : "the child's write") +
	       ", then the device's write; child: " +
	       (c.child_sees == 'C' ? "its own write" : "as at fork");
}

void expects(const fork_case &c, const std::optional<kernel_version> &, case_record &r)
{
	r.details = {{"source", c.checks}};
	r.expected = {{"summary", expected_summary(c)},
		      {"child_sees", std::string(1, c.child_sees)},
		      {"parent_sees", std::string(1, c.parent_sees)},
		      {"device_cpu_agree", true}};
}

void judge(const fork_case &c, const std::optional<kernel_version> &, const json &observation, case_record &r)
{
	json checks = json::array();
	for (const auto &k : checks_of(c, observation)) {
		const bool ok = k.want == k.got;
		checks.push_back({{"what", k.what}, {"want", k.want}, {"got", k.got}, {"ok", ok}});
		if (!ok) {
			r.outcome = verdict::fail;
			r.add_reason(k.what + ": want " + k.want + ", got " + k.got);
		}
	}
	r.details["second_pin"] = observation.value("second_pin", "");
	r.observed = observation;
	(*r.observed)["checks"] = checks;
	(*r.observed)["summary"] = r.outcome == verdict::pass ? "as expected" : r.reason;
}

} // namespace

const suite_definition<fork_case> definition = {
	.name = "fork",
	.table = case_table,
	.needs = {.second_pin = true},
	.run = run_case,
	.expects = expects,
	.judge = judge,
};

} // namespace pinmatrix::fork_cases
