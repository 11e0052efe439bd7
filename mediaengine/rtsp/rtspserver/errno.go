package rtspserver

import "syscall"

// errTooManyFiles is the accept error that calls for a pause, not an exit.
var errTooManyFiles = syscall.EMFILE
