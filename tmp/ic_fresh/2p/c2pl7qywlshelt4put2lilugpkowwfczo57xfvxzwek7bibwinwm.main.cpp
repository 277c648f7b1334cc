
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       float* in_out_ptr1,
                       const float* in_ptr0,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       const float* in_ptr4,
                       const int64_t* in_ptr5,
                       const float* in_ptr6,
                       const float* in_ptr7,
                       const float* in_ptr8,
                       const float* in_ptr10,
                       const float* in_ptr11,
                       const float* in_ptr12,
                       const int64_t* in_ptr13,
                       const float* in_ptr14,
                       const float* in_ptr15,
                       float* out_ptr0,
                       float* out_ptr1,
                       float* out_ptr2,
                       float* out_ptr3,
                       float* out_ptr4,
                       float* out_ptr5,
                       float* out_ptr6,
                       float* out_ptr7,
                       float* out_ptr8,
                       const int64_t ks0,
                       const int64_t ks1)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    auto in_ptr9 = in_out_ptr0;
    auto in_ptr1 = in_out_ptr1;
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(4L); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(8L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0L) && x2 < static_cast<int64_t>(8L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(8L + x2), static_cast<int64_t>(8L));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(8L + x2 + 16L*x1 + 64L*x0), static_cast<int64_t>(8L));
                                auto tmp2 = in_ptr2[static_cast<int64_t>(x1 + 4L*x0)];
                                auto tmp12 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x2), static_cast<int64_t>(8L));
                                auto tmp13 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x2 + 16L*x1 + 64L*x0), static_cast<int64_t>(8L));
                                auto tmp3 = static_cast<float>(16.0);
                                auto tmp4 = tmp2 / tmp3;
                                auto tmp5 = static_cast<float>(1e-06);
                                auto tmp6 = float(tmp4 + tmp5);
                                auto tmp7 = 1 / std::sqrt(tmp6);
                                auto tmp8 = at::vec::Vectorized<float>(tmp7);
                                auto tmp9 = tmp1 * tmp8;
                                auto tmp10 = tmp0 * tmp9;
                                auto tmp11 = tmp10.neg();
                                auto tmp14 = tmp13 * tmp8;
                                auto tmp15 = tmp12 * tmp14;
                                tmp11.store(out_ptr0 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks0*x1), static_cast<int64_t>(8L));
                                tmp15.store(out_ptr1 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks0*x1), static_cast<int64_t>(8L));
                            }
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks1); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(4L); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(8L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0L) && x2 < static_cast<int64_t>(8L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(8L + x2), static_cast<int64_t>(8L));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(8L + x2 + 16L*x1 + 64L*x0), static_cast<int64_t>(8L));
                                auto tmp2 = in_ptr4[static_cast<int64_t>(x1 + 4L*x0)];
                                auto tmp7 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x2), static_cast<int64_t>(8L));
                                auto tmp8 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x2 + 16L*x1 + 64L*x0), static_cast<int64_t>(8L));
                                auto tmp3 = at::vec::Vectorized<float>(tmp2);
                                auto tmp4 = tmp1 * tmp3;
                                auto tmp5 = tmp0 * tmp4;
                                auto tmp6 = tmp5.neg();
                                auto tmp9 = tmp8 * tmp3;
                                auto tmp10 = tmp7 * tmp9;
                                tmp6.store(out_ptr2 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks1*x1), static_cast<int64_t>(8L));
                                tmp10.store(out_ptr3 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks1*x1), static_cast<int64_t>(8L));
                            }
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks1); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(4L); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(16L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0) && x2 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x2), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x2 + 16L*x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp2 = in_ptr4[static_cast<int64_t>(x1 + 4L*x0)];
                                auto tmp6 = in_ptr5[static_cast<int64_t>(x0)];
                                auto tmp15 =
                                [&]
                                {
                                    __at_align__ std::array<float, 16> tmpbuf;
                                    #pragma GCC unroll 16
                                    for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                    {
                                        tmpbuf[x2_inner] = in_ptr6[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                    }
                                    return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                }
                                ()
                                ;
                                auto tmp24 = at::vec::Vectorized<float>::loadu(in_ptr7 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks1*x1), static_cast<int64_t>(16));
                                auto tmp3 = at::vec::Vectorized<float>(tmp2);
                                auto tmp4 = tmp1 * tmp3;
                                auto tmp5 = tmp0 * tmp4;
                                auto tmp7 = 91L;
                                auto tmp8 = c10::convert<int64_t>(tmp7);
                                auto tmp9 = int64_t(tmp6 + tmp8);
                                auto tmp10 = tmp6 < 0;
                                auto tmp11 = tmp10 ? tmp9 : tmp6;
                                auto tmp12 = tmp11;
                                auto tmp13 = c10::convert<int64_t>(tmp12);
                                TORCH_CHECK((0 <= tmp13) & (tmp13 < 91L), "index out of bounds: 0 <= tmp13 < 91L");
                                auto tmp16 = c10::convert<float>(tmp12);
                                auto tmp17 = at::vec::Vectorized<float>(tmp16);
                                auto tmp18 = tmp17 * tmp15;
                                auto tmp19 = tmp18.cos();
                                auto tmp20 = static_cast<float>(1.0);
                                auto tmp21 = at::vec::Vectorized<float>(tmp20);
                                auto tmp22 = tmp19 * tmp21;
                                auto tmp23 = tmp5 * tmp22;
                                auto tmp25 = tmp18.sin();
                                auto tmp26 = tmp25 * tmp21;
                                auto tmp27 = tmp24 * tmp26;
                                auto tmp28 = tmp23 + tmp27;
                                tmp28.store(out_ptr4 + static_cast<int64_t>(x2 + 16L*x1 + 64L*x0));
                            }
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(2L); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(8L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0L) && x2 < static_cast<int64_t>(8L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr8 + static_cast<int64_t>(8L + x2), static_cast<int64_t>(8L));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr9 + static_cast<int64_t>(8L + x2 + 16L*x1 + 32L*x0), static_cast<int64_t>(8L));
                                auto tmp2 = in_ptr10[static_cast<int64_t>(x1 + 2L*x0)];
                                auto tmp12 = at::vec::Vectorized<float>::loadu(in_ptr8 + static_cast<int64_t>(x2), static_cast<int64_t>(8L));
                                auto tmp13 = at::vec::Vectorized<float>::loadu(in_ptr9 + static_cast<int64_t>(x2 + 16L*x1 + 32L*x0), static_cast<int64_t>(8L));
                                auto tmp3 = static_cast<float>(16.0);
                                auto tmp4 = tmp2 / tmp3;
                                auto tmp5 = static_cast<float>(1e-06);
                                auto tmp6 = float(tmp4 + tmp5);
                                auto tmp7 = 1 / std::sqrt(tmp6);
                                auto tmp8 = at::vec::Vectorized<float>(tmp7);
                                auto tmp9 = tmp1 * tmp8;
                                auto tmp10 = tmp0 * tmp9;
                                auto tmp11 = tmp10.neg();
                                auto tmp14 = tmp13 * tmp8;
                                auto tmp15 = tmp12 * tmp14;
                                tmp11.store(out_ptr5 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks0*x1), static_cast<int64_t>(8L));
                                tmp15.store(out_ptr6 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks0*x1), static_cast<int64_t>(8L));
                            }
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks1); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(2L); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(8L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0L) && x2 < static_cast<int64_t>(8L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr8 + static_cast<int64_t>(8L + x2), static_cast<int64_t>(8L));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr11 + static_cast<int64_t>(8L + x2 + 16L*x1 + 32L*x0), static_cast<int64_t>(8L));
                                auto tmp2 = in_ptr12[static_cast<int64_t>(x1 + 2L*x0)];
                                auto tmp7 = at::vec::Vectorized<float>::loadu(in_ptr8 + static_cast<int64_t>(x2), static_cast<int64_t>(8L));
                                auto tmp8 = at::vec::Vectorized<float>::loadu(in_ptr11 + static_cast<int64_t>(x2 + 16L*x1 + 32L*x0), static_cast<int64_t>(8L));
                                auto tmp3 = at::vec::Vectorized<float>(tmp2);
                                auto tmp4 = tmp1 * tmp3;
                                auto tmp5 = tmp0 * tmp4;
                                auto tmp6 = tmp5.neg();
                                auto tmp9 = tmp8 * tmp3;
                                auto tmp10 = tmp7 * tmp9;
                                tmp6.store(out_ptr7 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks1*x1), static_cast<int64_t>(8L));
                                tmp10.store(out_ptr8 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks1*x1), static_cast<int64_t>(8L));
                            }
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(2L); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(16L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0) && x2 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr8 + static_cast<int64_t>(x2), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_out_ptr0 + static_cast<int64_t>(x2 + 16L*x1 + 32L*x0), static_cast<int64_t>(16));
                                auto tmp2 = in_ptr10[static_cast<int64_t>(x1 + 2L*x0)];
                                auto tmp11 = in_ptr13[static_cast<int64_t>(x0)];
                                auto tmp20 =
                                [&]
                                {
                                    __at_align__ std::array<float, 16> tmpbuf;
                                    #pragma GCC unroll 16
                                    for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                    {
                                        tmpbuf[x2_inner] = in_ptr6[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                    }
                                    return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                }
                                ()
                                ;
                                auto tmp29 = at::vec::Vectorized<float>::loadu(in_ptr14 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks0*x1), static_cast<int64_t>(16));
                                auto tmp3 = static_cast<float>(16.0);
                                auto tmp4 = tmp2 / tmp3;
                                auto tmp5 = static_cast<float>(1e-06);
                                auto tmp6 = float(tmp4 + tmp5);
                                auto tmp7 = 1 / std::sqrt(tmp6);
                                auto tmp8 = at::vec::Vectorized<float>(tmp7);
                                auto tmp9 = tmp1 * tmp8;
                                auto tmp10 = tmp0 * tmp9;
                                auto tmp12 = 91L;
                                auto tmp13 = c10::convert<int64_t>(tmp12);
                                auto tmp14 = int64_t(tmp11 + tmp13);
                                auto tmp15 = tmp11 < 0;
                                auto tmp16 = tmp15 ? tmp14 : tmp11;
                                auto tmp17 = tmp16;
                                auto tmp18 = c10::convert<int64_t>(tmp17);
                                TORCH_CHECK((0 <= tmp18) & (tmp18 < 91L), "index out of bounds: 0 <= tmp18 < 91L");
                                auto tmp21 = c10::convert<float>(tmp17);
                                auto tmp22 = at::vec::Vectorized<float>(tmp21);
                                auto tmp23 = tmp22 * tmp20;
                                auto tmp24 = tmp23.cos();
                                auto tmp25 = static_cast<float>(1.0);
                                auto tmp26 = at::vec::Vectorized<float>(tmp25);
                                auto tmp27 = tmp24 * tmp26;
                                auto tmp28 = tmp10 * tmp27;
                                auto tmp30 = tmp23.sin();
                                auto tmp31 = tmp30 * tmp26;
                                auto tmp32 = tmp29 * tmp31;
                                auto tmp33 = tmp28 + tmp32;
                                tmp33.store(in_out_ptr0 + static_cast<int64_t>(x2 + 16L*x1 + 32L*x0));
                            }
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(ks0); x0+=static_cast<int64_t>(1L))
            {
                #pragma GCC ivdep
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(4L); x1+=static_cast<int64_t>(1L))
                {
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(16L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0) && x2 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x2), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_out_ptr1 + static_cast<int64_t>(x2 + 16L*x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp2 = in_ptr2[static_cast<int64_t>(x1 + 4L*x0)];
                                auto tmp11 = in_ptr13[static_cast<int64_t>(x0)];
                                auto tmp20 =
                                [&]
                                {
                                    __at_align__ std::array<float, 16> tmpbuf;
                                    #pragma GCC unroll 16
                                    for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                    {
                                        tmpbuf[x2_inner] = in_ptr6[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                    }
                                    return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                }
                                ()
                                ;
                                auto tmp29 = at::vec::Vectorized<float>::loadu(in_ptr15 + static_cast<int64_t>(x2 + 16L*x0 + 16L*ks0*x1), static_cast<int64_t>(16));
                                auto tmp3 = static_cast<float>(16.0);
                                auto tmp4 = tmp2 / tmp3;
                                auto tmp5 = static_cast<float>(1e-06);
                                auto tmp6 = float(tmp4 + tmp5);
                                auto tmp7 = 1 / std::sqrt(tmp6);
                                auto tmp8 = at::vec::Vectorized<float>(tmp7);
                                auto tmp9 = tmp1 * tmp8;
                                auto tmp10 = tmp0 * tmp9;
                                auto tmp12 = 91L;
                                auto tmp13 = c10::convert<int64_t>(tmp12);
                                auto tmp14 = int64_t(tmp11 + tmp13);
                                auto tmp15 = tmp11 < 0;
                                auto tmp16 = tmp15 ? tmp14 : tmp11;
                                auto tmp17 = tmp16;
                                auto tmp18 = c10::convert<int64_t>(tmp17);
                                TORCH_CHECK((0 <= tmp18) & (tmp18 < 91L), "index out of bounds: 0 <= tmp18 < 91L");
                                auto tmp21 = c10::convert<float>(tmp17);
                                auto tmp22 = at::vec::Vectorized<float>(tmp21);
                                auto tmp23 = tmp22 * tmp20;
                                auto tmp24 = tmp23.cos();
                                auto tmp25 = static_cast<float>(1.0);
                                auto tmp26 = at::vec::Vectorized<float>(tmp25);
                                auto tmp27 = tmp24 * tmp26;
                                auto tmp28 = tmp10 * tmp27;
                                auto tmp30 = tmp23.sin();
                                auto tmp31 = tmp30 * tmp26;
                                auto tmp32 = tmp29 * tmp31;
                                auto tmp33 = tmp28 + tmp32;
                                tmp33.store(in_out_ptr1 + static_cast<int64_t>(x2 + 16L*x1 + 64L*x0));
                            }
                        }
                    }
                }
            }
        }
    }
    inductor_cpu_integer_div_error_flag = nullptr;
    inductor_cpu_throw_if_integer_div_error(inductor_cpu_integer_div_error);
}

// Python bindings to call kernel():
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <sstream>
#include <cstdlib>
#include <cerrno>

// This is defined in guards.cpp so we don't need to import PyTorch headers that are slooow.
// We manually link it below to workaround issues with fbcode build.
static void* (*_torchinductor_pyobject_tensor_data_ptr)(PyObject* obj);

template <typename T> static inline T parse_arg(PyObject* args, size_t n) {
    static_assert(std::is_pointer_v<T>, "arg type must be pointer or long");
    return static_cast<T>(_torchinductor_pyobject_tensor_data_ptr(PyTuple_GET_ITEM(args, n)));
}
template <> inline int64_t parse_arg<int64_t>(PyObject* args, size_t n) {
    auto result = PyLong_AsSsize_t(PyTuple_GET_ITEM(args, n));
    if(result == -1 && PyErr_Occurred()) [[unlikely]]
        throw std::runtime_error("expected int arg");
    return result;
}
template <> inline uintptr_t parse_arg<uintptr_t>(PyObject* args, size_t n) {
    auto result = PyLong_AsVoidPtr(PyTuple_GET_ITEM(args, n));
    if(result == reinterpret_cast<void*>(-1) && PyErr_Occurred()) [[unlikely]]
        throw std::runtime_error("expected int arg");
    return reinterpret_cast<uintptr_t>(result);
}
template <> inline float parse_arg<float>(PyObject* args, size_t n) {
    auto result = PyFloat_AsDouble(PyTuple_GET_ITEM(args, n));
    if(result == -1.0 && PyErr_Occurred()) [[unlikely]]
        throw std::runtime_error("expected float arg");
    return static_cast<float>(result);
}



static PyObject* kernel_py(PyObject* self, PyObject* args) {
    try {
        if(!PyTuple_CheckExact(args)) [[unlikely]]
            throw std::runtime_error("tuple args required");
        if(PyTuple_GET_SIZE(args) != 27) [[unlikely]]
            throw std::runtime_error("requires 27 args");
        kernel(parse_arg<float*>(args, 0), parse_arg<float*>(args, 1), parse_arg<float*>(args, 2), parse_arg<float*>(args, 3), parse_arg<float*>(args, 4), parse_arg<float*>(args, 5), parse_arg<int64_t*>(args, 6), parse_arg<float*>(args, 7), parse_arg<float*>(args, 8), parse_arg<float*>(args, 9), parse_arg<float*>(args, 10), parse_arg<float*>(args, 11), parse_arg<float*>(args, 12), parse_arg<int64_t*>(args, 13), parse_arg<float*>(args, 14), parse_arg<float*>(args, 15), parse_arg<float*>(args, 16), parse_arg<float*>(args, 17), parse_arg<float*>(args, 18), parse_arg<float*>(args, 19), parse_arg<float*>(args, 20), parse_arg<float*>(args, 21), parse_arg<float*>(args, 22), parse_arg<float*>(args, 23), parse_arg<float*>(args, 24), parse_arg<int64_t>(args, 25), parse_arg<int64_t>(args, 26)); Py_RETURN_NONE;
    } catch(std::exception const& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
        return nullptr;
    } catch(...) {
        PyErr_SetString(PyExc_RuntimeError, "unhandled error");
        return nullptr;
    }
}

static PyMethodDef py_methods[] = {
    {"kernel", kernel_py, METH_VARARGS, ""},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef py_module =
    {PyModuleDef_HEAD_INIT, "kernel", NULL, -1, py_methods};

PyMODINIT_FUNC PyInit_kernel(void) {
    const char* str_addr = std::getenv("_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR");
    if(!str_addr) {
        PyErr_SetString(PyExc_RuntimeError, "_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR must be set");
        return nullptr;
    }

    char* endptr = nullptr;
    errno = 0;
    uintptr_t addr = std::strtoull(str_addr, &endptr, 10);
    if(errno != 0 || endptr == str_addr || addr == 0) {
        PyErr_SetString(PyExc_RuntimeError, "Failed to parse _TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR");
        return nullptr;
    }
    _torchinductor_pyobject_tensor_data_ptr =
        reinterpret_cast<decltype(_torchinductor_pyobject_tensor_data_ptr)>(addr);
    PyObject* module = PyModule_Create(&py_module);
    if (module == NULL) {
        return NULL;
    }
    #ifdef Py_GIL_DISABLED
        PyUnstable_Module_SetGIL(module, Py_MOD_GIL_NOT_USED);
    #endif
    return module;
}
