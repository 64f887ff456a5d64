//go:build !linux

package realpath

import "golang.org/x/sys/unix"

// dirFlags open a directory for use as the base of *at calls.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
