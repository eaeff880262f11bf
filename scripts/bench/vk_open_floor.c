/* The driver's own share of a Vulkan device's first use (issue 29 item 5):
 * what vkCreateInstance (the loader loading every driver it is given, for
 * lavapipe LLVM too), vkEnumeratePhysicalDevices and vkCreateDevice take in a
 * process that does nothing else, wall and processor seconds. vela's first
 * mm cannot take less; scripts/bench/first_use.sh prints this beside it.
 *   cc -O2 -o /tmp/floor scripts/bench/vk_open_floor.c -lvulkan && /tmp/floor */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <time.h>
#include <vulkan/vulkan.h>

static double seconds(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
    double w0 = seconds(CLOCK_MONOTONIC), c0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkInstance instance;
    if (vkCreateInstance(&ici, NULL, &instance) != VK_SUCCESS) return fprintf(stderr, "no Vulkan instance\n"), 1;
    double w1 = seconds(CLOCK_MONOTONIC);
    uint32_t n = 1;
    VkPhysicalDevice pd;
    VkResult r = vkEnumeratePhysicalDevices(instance, &n, &pd);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0) return fprintf(stderr, "no Vulkan device\n"), 1;
    double w2 = seconds(CLOCK_MONOTONIC);
    float priority = 1;
    VkDeviceQueueCreateInfo q = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueCount = 1,
                                 .pQueuePriorities = &priority};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &q};
    VkDevice device;
    if (vkCreateDevice(pd, &dci, NULL, &device) != VK_SUCCESS) return fprintf(stderr, "no Vulkan device\n"), 1;
    double w3 = seconds(CLOCK_MONOTONIC), c3 = seconds(CLOCK_PROCESS_CPUTIME_ID);
    printf("driver floor: %.3f s wall, %.3f s cpu (vkCreateInstance %.3f, vkEnumeratePhysicalDevices %.3f, "
           "vkCreateDevice %.3f s wall)\n", w3 - w0, c3 - c0, w1 - w0, w2 - w1, w3 - w2);
    vkDestroyDevice(device, NULL);
    vkDestroyInstance(instance, NULL);
    return 0;
}
