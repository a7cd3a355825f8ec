// SPDX-License-Identifier: GPL-2.0
#pragma once

// QEMU's machine protocol (QMP) on a unix socket of our own: what
// `pinmatrix vm` asks a guest that outlived its timeout before QEMU is
// killed. The socket lives in a private directory under /tmp (a unix
// socket path is at most 107 bytes; --out may be longer), removed with
// the object.

#include <filesystem>
#include <string>

namespace pinmatrix {

class qmp_socket {
public:
	qmp_socket();	// makes the directory; QEMU creates the socket
	~qmp_socket();
	qmp_socket(const qmp_socket &) = delete;
	qmp_socket &operator=(const qmp_socket &) = delete;

	// For QEMU's -qmp: a server that does not wait for us.
	std::string qemu_arg() const;
	// Presses Alt+SysRq+KEY on the guest's keyboard for each key, in
	// order (HMP sendkey through QMP). "" when every key was sent, else
	// why not. Bounded: each reply is waited for at most two seconds.
	std::string send_sysrq(const std::string &keys) const;

private:
	std::filesystem::path dir_;
};

} // namespace pinmatrix
