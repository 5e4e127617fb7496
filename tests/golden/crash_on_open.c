/* LD_PRELOAD shim for test_golden_isolation: H5Fopen of a file whose name contains
 * $MOE_CRASH_ON_OPEN dies of SIGSEGV, in whichever process opens it, as HDF5 itself did on some
 * damaged files (tests/golden/fuzz-regressions/README.md) before the reader learnt to refuse
 * them. The tools must survive a reader that crashes on a file they have never seen; this lets
 * the tests say so without a file that crashes HDF5 today. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t hid_t; /* HDF5 1.10's */

hid_t H5Fopen(const char* name, unsigned flags, hid_t access) {
    static hid_t (*real)(const char*, unsigned, hid_t);
    if (!real) *(void**)(&real) = dlsym(RTLD_NEXT, "H5Fopen"); /* POSIX: functions through void* */
    const char* part = getenv("MOE_CRASH_ON_OPEN");
    if (part && *part && name && strstr(name, part)) raise(SIGSEGV);
    return real(name, flags, access);
}
