/* win_crt_math.c -- the Windows build's transcendental functions, taken from the C run-time DLL.
 *
 * zig cc links a Windows DLL's sin, cos, tan ... from its own static libc, whose last bits differ
 * from the Universal C Runtime's on about 3% of arguments.  Python's math module on Windows (which
 * core/detmath.py, the NumPy reference, calls) is the UCRT's, so the DLL must call the same: the
 * build compiles the library's sources with -Dsin=bbk_crt_sin ... (scripts/build_native.py), and
 * each bbk_crt_ function here calls the UCRT's through its import (dllimport names __imp_sin, which
 * only the UCRT's import library defines).  Not part of the run-time engines copy.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#undef sin
#undef cos
#undef tan
#undef asin
#undef acos
#undef atan
#undef atan2
#undef exp
#undef log
#undef log10
#undef pow

#define CRT_IMPORT __declspec(dllimport)

CRT_IMPORT double sin(double);
CRT_IMPORT double cos(double);
CRT_IMPORT double tan(double);
CRT_IMPORT double asin(double);
CRT_IMPORT double acos(double);
CRT_IMPORT double atan(double);
CRT_IMPORT double atan2(double, double);
CRT_IMPORT double exp(double);
CRT_IMPORT double log(double);
CRT_IMPORT double log10(double);
CRT_IMPORT double pow(double, double);

double bbk_crt_sin(double x) { return sin(x); }
double bbk_crt_cos(double x) { return cos(x); }
double bbk_crt_tan(double x) { return tan(x); }
double bbk_crt_asin(double x) { return asin(x); }
double bbk_crt_acos(double x) { return acos(x); }
double bbk_crt_atan(double x) { return atan(x); }
double bbk_crt_atan2(double y, double x) { return atan2(y, x); }
double bbk_crt_exp(double x) { return exp(x); }
double bbk_crt_log(double x) { return log(x); }
double bbk_crt_log10(double x) { return log10(x); }
double bbk_crt_pow(double x, double y) { return pow(x, y); }
