/* LD_PRELOAD shim for test_check_isolation: H5Fopen of a file whose name holds "crashes-hdf5",
 * and H5Oopen of an object whose name holds $CRASH_ON_DATASET, raise SIGSEGV, as a damaged
 * old-format file can make HDF5 1.10 do; every other open is HDF5's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

typedef int64_t hid_t; /* HDF5 1.10's */

hid_t H5Fopen(const char* name, unsigned flags, hid_t fapl) {
    static hid_t (*real)(const char*, unsigned, hid_t);
    if (name && strstr(name, "crashes-hdf5")) raise(SIGSEGV);
    if (!real) *(void**)(&real) = dlsym(RTLD_NEXT, "H5Fopen"); /* POSIX: a function through void* */
    return real(name, flags, fapl);
}

hid_t H5Oopen(hid_t loc, const char* name, hid_t lapl) {
    static hid_t (*real)(hid_t, const char*, hid_t);
    const char* crash = getenv("CRASH_ON_DATASET");
    if (crash && *crash && name && strstr(name, crash)) raise(SIGSEGV);
    if (!real) *(void**)(&real) = dlsym(RTLD_NEXT, "H5Oopen");
    return real(loc, name, lapl);
}
