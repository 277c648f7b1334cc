
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(float* in_out_ptr0,
                       const float* in_ptr0,
                       const int64_t* in_ptr1,
                       const float* in_ptr2,
                       const float* in_ptr3,
                       const float* in_ptr4,
                       const float* in_ptr5,
                       float* out_ptr1,
                       float* out_ptr2,
                       const int64_t ks0)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    inductor_cpu_integer_div_error_flag = &inductor_cpu_integer_div_error;
    auto out_ptr0 = in_out_ptr0;
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
                    for(int64_t x2=static_cast<int64_t>(0L); x2<static_cast<int64_t>(16L); x2+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x2 >= static_cast<int64_t>(0) && x2 < static_cast<int64_t>(16L)))
                            {
                                auto tmp59 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x2 + 16L*x1 + 64L*x0), static_cast<int64_t>(16));
                                auto tmp60 = in_ptr1[static_cast<int64_t>(x0)];
                                auto tmp69 =
                                [&]
                                {
                                    __at_align__ std::array<float, 16> tmpbuf;
                                    #pragma GCC unroll 16
                                    for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                    {
                                        tmpbuf[x2_inner] = in_ptr2[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                    }
                                    return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                }
                                ()
                                ;
                                auto tmp0 = x2;
                                auto tmp1 = c10::convert<int64_t>(tmp0);
                                auto tmp2 = at::vec::VectorizedN<int64_t,2>::arange(tmp1, 1);
                                auto tmp3 = static_cast<int64_t>(8);
                                auto tmp4 = at::vec::VectorizedN<int64_t,2>(tmp3);
                                auto tmp5 = at::vec::VecMask<int64_t,2>(tmp2 >= tmp4);
                                auto tmp6 = [&]
                                {
                                    auto tmp7 = tmp5.template cast<float,1>().template loadu<float,1>(in_ptr0 + static_cast<int64_t>((-8L) + x2 + 16L*x1 + 64L*x0));
                                    auto tmp8 = in_ptr1[static_cast<int64_t>(x0)];
                                    auto tmp9 = 91L;
                                    auto tmp10 = c10::convert<int64_t>(tmp9);
                                    auto tmp11 = int64_t(tmp8 + tmp10);
                                    auto tmp12 = tmp8 < 0;
                                    auto tmp13 = tmp12 ? tmp11 : tmp8;
                                    auto tmp14 = tmp13;
                                    auto tmp15 = c10::convert<int64_t>(tmp14);
                                    TORCH_CHECK(((0 <= tmp15) & (tmp15 < 91L)) | ~((tmp5).all_masked()), "index out of bounds: 0 <= tmp15 < 91L");
                                    auto tmp17 =
                                    [&]
                                    {
                                        __at_align__ std::array<float, 16> tmpbuf;
                                        #pragma GCC unroll 16
                                        for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                        {
                                            if (tmp5.is_masked(x2_inner))
                                            {
                                                tmpbuf[x2_inner] = in_ptr2[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                            }
                                        }
                                        return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                    }
                                    ()
                                    ;
                                    auto tmp18 = c10::convert<float>(tmp14);
                                    auto tmp19 = at::vec::Vectorized<float>(tmp18);
                                    auto tmp20 = tmp19 * tmp17;
                                    auto tmp21 = tmp20.sin();
                                    auto tmp22 = static_cast<float>(1.0);
                                    auto tmp23 = at::vec::Vectorized<float>(tmp22);
                                    auto tmp24 = tmp21 * tmp23;
                                    auto tmp25 = tmp7 * tmp24;
                                    auto tmp26 = tmp25.neg();
                                    return tmp26;
                                }
                                ;
                                auto tmp29 =
                                [&]
                                {
                                    if (tmp5.all_zero())
                                    {
                                        return at::vec::Vectorized<float>(static_cast<float>(0.0));
                                    }
                                    else
                                    {
                                        auto tmp27 = tmp6();
                                        auto tmp28 = at::vec::Vectorized<float>(static_cast<float>(0.0));
                                        return decltype(tmp27)::blendv(tmp28, tmp27, tmp5.template cast<float,1>());
                                    }
                                }
                                ()
                                ;
                                auto tmp30 = static_cast<float>(0.0);
                                auto tmp31 = at::vec::Vectorized<float>(tmp30);
                                auto tmp32 = decltype(tmp29)::blendv(tmp31, tmp29, tmp5.template cast<float,1>());
                                auto tmp33 = at::vec::VecMask<int64_t,2>(tmp2 < tmp4);
                                auto tmp34 = [&]
                                {
                                    auto tmp35 = tmp33.template cast<float,1>().template loadu<float,1>(in_ptr0 + static_cast<int64_t>(8L + x2 + 16L*x1 + 64L*x0));
                                    auto tmp36 = in_ptr1[static_cast<int64_t>(x0)];
                                    auto tmp37 = 91L;
                                    auto tmp38 = c10::convert<int64_t>(tmp37);
                                    auto tmp39 = int64_t(tmp36 + tmp38);
                                    auto tmp40 = tmp36 < 0;
                                    auto tmp41 = tmp40 ? tmp39 : tmp36;
                                    auto tmp42 = tmp41;
                                    auto tmp43 = c10::convert<int64_t>(tmp42);
                                    TORCH_CHECK(((0 <= tmp43) & (tmp43 < 91L)) | ~((tmp33).all_masked()), "index out of bounds: 0 <= tmp43 < 91L");
                                    auto tmp45 =
                                    [&]
                                    {
                                        __at_align__ std::array<float, 16> tmpbuf;
                                        #pragma GCC unroll 16
                                        for (long x2_inner = 0; x2_inner < static_cast<int64_t>(16); x2_inner++)
                                        {
                                            if (tmp33.is_masked(x2_inner))
                                            {
                                                tmpbuf[x2_inner] = in_ptr2[static_cast<int64_t>((static_cast<int64_t>(x2 + x2_inner) % static_cast<int64_t>(8L)))];
                                            }
                                        }
                                        return at::vec::Vectorized<float>::loadu(tmpbuf.data(), static_cast<int64_t>(16));
                                    }
                                    ()
                                    ;
                                    auto tmp46 = c10::convert<float>(tmp42);
                                    auto tmp47 = at::vec::Vectorized<float>(tmp46);
                                    auto tmp48 = tmp47 * tmp45;
                                    auto tmp49 = tmp48.sin();
                                    auto tmp50 = static_cast<float>(1.0);
                                    auto tmp51 = at::vec::Vectorized<float>(tmp50);
                                    auto tmp52 = tmp49 * tmp51;
                                    auto tmp53 = tmp35 * tmp52;
                                    return tmp53;
                                }
                                ;
                                auto tmp56 =
                                [&]
                                {
                                    if (tmp33.all_zero())
                                    {
                                        return at::vec::Vectorized<float>(static_cast<float>(0.0));
                                    }
                                    else
                                    {
                                        auto tmp54 = tmp34();
                                        auto tmp55 = at::vec::Vectorized<float>(static_cast<float>(0.0));
                                        return decltype(tmp54)::blendv(tmp55, tmp54, tmp33.template cast<float,1>());
                                    }
                                }
                                ()
                                ;
                                auto tmp57 = decltype(tmp56)::blendv(tmp31, tmp56, tmp33.template cast<float,1>());
                                auto tmp58 = tmp32 + tmp57;
                                auto tmp61 = 91L;
                                auto tmp62 = c10::convert<int64_t>(tmp61);
                                auto tmp63 = int64_t(tmp60 + tmp62);
                                auto tmp64 = tmp60 < 0;
                                auto tmp65 = tmp64 ? tmp63 : tmp60;
                                auto tmp66 = tmp65;
                                auto tmp67 = c10::convert<int64_t>(tmp66);
                                TORCH_CHECK((0 <= tmp67) & (tmp67 < 91L), "index out of bounds: 0 <= tmp67 < 91L");
                                auto tmp70 = c10::convert<float>(tmp66);
                                auto tmp71 = at::vec::Vectorized<float>(tmp70);
                                auto tmp72 = tmp71 * tmp69;
                                auto tmp73 = tmp72.cos();
                                auto tmp74 = static_cast<float>(1.0);
                                auto tmp75 = at::vec::Vectorized<float>(tmp74);
                                auto tmp76 = tmp73 * tmp75;
                                auto tmp77 = tmp59 * tmp76;
                                auto tmp78 = tmp58 + tmp77;
                                tmp78.store(out_ptr0 + static_cast<int64_t>(x2 + 16L*x1 + 64L*x0));
                            }
                        }
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(16L); x0+=static_cast<int64_t>(16L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(4L*ks0); x1+=static_cast<int64_t>(1L))
                    {
                        {
                            if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr0 + static_cast<int64_t>(x0 + 16L*x1), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x0 + 16L*x1), static_cast<int64_t>(16));
                                auto tmp2 = in_ptr4[static_cast<int64_t>(x1)];
                                auto tmp3 = at::vec::Vectorized<float>(tmp2);
                                auto tmp4 = tmp1 * tmp3;
                                auto tmp5 = tmp0 * tmp4;
                                tmp_acc0_vec = tmp_acc0_vec + tmp5;
                            }
                        }
                    }
                    if(C10_LIKELY(x0 >= static_cast<int64_t>(0) && x0 < static_cast<int64_t>(16L)))
                    {
                        tmp_acc0_vec.store(out_ptr1 + static_cast<int64_t>(x0));
                    }
                }
            }
        }
        {
            #pragma omp for
            for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(4L*ks0); x0+=static_cast<int64_t>(1L))
            {
                {
                    float tmp_acc0 = 0;
                    at::vec::Vectorized<float> tmp_acc0_vec = at::vec::Vectorized<float>(0);
                    for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(16L); x1+=static_cast<int64_t>(16L))
                    {
                        {
                            if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L)))
                            {
                                auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr0 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                                auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr5 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                                auto tmp3 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                                auto tmp2 = tmp0 * tmp1;
                                auto tmp4 = tmp2 * tmp3;
                                tmp_acc0_vec = tmp_acc0_vec + tmp4;
                            }
                        }
                    }
                    tmp_acc0 = tmp_acc0 + at::vec::vec_reduce_all<float, 1>([](at::vec::Vectorized<float>& x, at::vec::Vectorized<float>& y) { return x + y; }, tmp_acc0_vec);
                    out_ptr2[static_cast<int64_t>(x0)] = static_cast<float>(tmp_acc0);
                }
                for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(16L); x1+=static_cast<int64_t>(16L))
                {
                    {
                        if(C10_LIKELY(x1 >= static_cast<int64_t>(0) && x1 < static_cast<int64_t>(16L)))
                        {
                            auto tmp0 = at::vec::Vectorized<float>::loadu(out_ptr0 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                            auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr5 + static_cast<int64_t>(x1), static_cast<int64_t>(16));
                            auto tmp3 = in_ptr4[static_cast<int64_t>(x0)];
                            auto tmp6 = out_ptr2[static_cast<int64_t>(x0)];
                            auto tmp14 = at::vec::Vectorized<float>::loadu(in_ptr3 + static_cast<int64_t>(x1 + 16L*x0), static_cast<int64_t>(16));
                            auto tmp2 = tmp0 * tmp1;
                            auto tmp4 = at::vec::Vectorized<float>(tmp3);
                            auto tmp5 = tmp2 * tmp4;
                            auto tmp7 = static_cast<float>(-0.5);
                            auto tmp8 = float(tmp6 * tmp7);
                            auto tmp9 = float(tmp3 * tmp3);
                            auto tmp10 = float(tmp9 * tmp3);
                            auto tmp11 = float(tmp8 * tmp10);
                            auto tmp12 = static_cast<float>(16.0);
                            auto tmp13 = tmp11 / tmp12;
                            auto tmp15 = static_cast<float>(2.0);
                            auto tmp16 = at::vec::Vectorized<float>(tmp15);
                            auto tmp17 = tmp14 * tmp16;
                            auto tmp18 = at::vec::Vectorized<float>(tmp13);
                            auto tmp19 = tmp18 * tmp17;
                            auto tmp20 = tmp5 + tmp19;
                            tmp20.store(in_out_ptr0 + static_cast<int64_t>(x1 + 16L*x0));
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
        if(PyTuple_GET_SIZE(args) != 10) [[unlikely]]
            throw std::runtime_error("requires 10 args");
        kernel(parse_arg<float*>(args, 0), parse_arg<float*>(args, 1), parse_arg<int64_t*>(args, 2), parse_arg<float*>(args, 3), parse_arg<float*>(args, 4), parse_arg<float*>(args, 5), parse_arg<float*>(args, 6), parse_arg<float*>(args, 7), parse_arg<float*>(args, 8), parse_arg<int64_t>(args, 9)); Py_RETURN_NONE;
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
