package realpath

import "golang.org/x/sys/unix"

// dirFlags open a directory for use as the base of *at calls. O_PATH needs
// only search permission on it, as a path walk by the kernel does.
const dirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
