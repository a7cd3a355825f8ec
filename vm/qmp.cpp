// SPDX-License-Identifier: GPL-2.0
#include "qmp.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "sys_error.hpp"
#include "unique_fd.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace pinmatrix {

namespace {

// One QMP connection: JSON lines each way.
class qmp_connection {
public:
	explicit qmp_connection(const fs::path &socket)
	{
		sockaddr_un addr{};
		addr.sun_family = AF_UNIX;
		std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket.c_str());
		fd_ = unique_fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
		if (!fd_ || connect(fd_.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)))
			throw last_sys_error("connect " + socket.string());
	}

	// The next message that is not an event, or throws after two seconds.
	json next_reply()
	{
		for (;;) {
			const json msg = json::parse(next_line(), nullptr, false);
			if (msg.is_object() && !msg.contains("event"))
				return msg;
		}
	}

	// Sends a command; throws unless its reply is a "return".
	void execute(const json &cmd)
	{
		const std::string text = cmd.dump() + "\n";
		if (::send(fd_.get(), text.data(), text.size(), MSG_NOSIGNAL) != ssize_t(text.size()))
			throw last_sys_error("send to QMP");
		const json reply = next_reply();
		if (!reply.contains("return"))
			throw std::runtime_error("QMP refused " + cmd.value("execute", "?") + ": " + reply.dump());
	}

private:
	std::string next_line()
	{
		for (;;) {
			if (const auto nl = buf_.find('\n'); nl != std::string::npos) {
				std::string line = buf_.substr(0, nl);
				buf_.erase(0, nl + 1);
				return line;
			}
			pollfd p{fd_.get(), POLLIN, 0};
			if (poll(&p, 1, 2000) <= 0)
				throw std::runtime_error("QMP did not answer within 2 s");
			char chunk[4096];
			const ssize_t n = ::recv(fd_.get(), chunk, sizeof(chunk), 0);
			if (n <= 0)
				throw std::runtime_error("QMP closed the connection");
			buf_.append(chunk, size_t(n));
		}
	}

	unique_fd fd_;
	std::string buf_;
};

} // namespace

qmp_socket::qmp_socket()
{
	char tmpl[] = "/tmp/pinmatrix-qmp.XXXXXX";
	if (!mkdtemp(tmpl))
		throw last_sys_error("mkdtemp /tmp/pinmatrix-qmp.XXXXXX");
	dir_ = tmpl;
}

qmp_socket::~qmp_socket()
{
	std::error_code ignored;
	fs::remove_all(dir_, ignored);
}

std::string qmp_socket::qemu_arg() const
{
	return "unix:" + (dir_ / "qmp.sock").string() + ",server=on,wait=off";
}

std::string qmp_socket::send_sysrq(const std::string &keys) const
{
	try {
		qmp_connection qmp(dir_ / "qmp.sock");
		qmp.next_reply();	// the greeting
		qmp.execute({{"execute", "qmp_capabilities"}});
		for (const char key : keys)
			qmp.execute({{"execute", "human-monitor-command"},
				     {"arguments", {{"command-line", std::string("sendkey alt-sysrq-") + key}}}});
		return "";
	} catch (const std::exception &e) {
		return e.what();
	}
}

} // namespace pinmatrix
