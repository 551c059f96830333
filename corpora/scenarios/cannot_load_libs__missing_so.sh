#!/bin/bash
# Reproduces: the dynamic loader cannot find a shared library a program was linked against:
# "error while loading shared libraries: libX.so.1: cannot open shared object file: No such file or directory"
# (a tiny C program linked to a shared lib, then the lib is removed), also for a Python
# extension module (ImportError) and for ctypes.CDLL (OSError).
set -u
PY=${PY:-python3}
d=/tmp/failclass_scenarios/$(basename "$0" .sh); rm -rf "$d"; mkdir -p "$d"; trap 'rm -rf "$d"' EXIT
cd "$d"
printf 'int nccl_like_init(void){return 0;}\n' > libfakenccl.c
gcc -shared -fPIC -Wl,-soname,libfakenccl.so.2 -o libfakenccl.so.2 libfakenccl.c
ln -s libfakenccl.so.2 libfakenccl.so
printf 'int nccl_like_init(void);\nint main(void){return nccl_like_init();}\n' > trainer.c
gcc -o trainer trainer.c -L. -lfakenccl
printf '#include <Python.h>\nint nccl_like_init(void);\nstatic struct PyModuleDef m={PyModuleDef_HEAD_INIT,"_C",0,-1,0};\nPyMODINIT_FUNC PyInit__C(void){nccl_like_init();return PyModule_Create(&m);}\n' > ext.c
INC=$($PY -c 'import sysconfig;print(sysconfig.get_paths()["include"])')
gcc -shared -fPIC -I"$INC" -o _C.cpython-311-x86_64-linux-gnu.so ext.c -L. -lfakenccl 2>/dev/null || echo "(python headers missing)"
rm -f libfakenccl.so libfakenccl.so.2
./trainer; echo "exit code: $?"
$PY -c "import _C"; echo "exit code: $?"
$PY -c "import ctypes; ctypes.CDLL('libcudart.so.11.0')"; echo "exit code: $?"
