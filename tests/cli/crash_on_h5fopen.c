/* LD_PRELOAD shim for test_check_isolation: H5Fopen of a file whose name holds "crashes-hdf5"
 * raises SIGSEGV, as a damaged old-format file can make HDF5 1.10 do; every other open is HDF5's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

typedef int64_t hid_t; /* HDF5 1.10's */

hid_t H5Fopen(const char* name, unsigned flags, hid_t fapl) {
    static hid_t (*real)(const char*, unsigned, hid_t);
    if (name && strstr(name, "crashes-hdf5")) raise(SIGSEGV);
    if (!real) *(void**)(&real) = dlsym(RTLD_NEXT, "H5Fopen"); /* POSIX: a function through void* */
    return real(name, flags, fapl);
}
