// A bare Vulkan compute harness for probe.sh (not part of vela): runs one
// SPIR-V shader over `groups` workgroups `reps` times on the first device (the
// loader's VK_ICD_FILENAMES picks the driver) and prints the best wall and
// process CPU time, and per `unit` (the shader's operations, or flops) the
// rate. Push constants: the 64-bit address of a 256 MiB buffer and n (the
// shader's loop count).
//   probe SPV GROUPS REPS UNITS_PER_GROUP N
#include <vulkan/vulkan.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <chrono>
#include <ctime>
#define CK(x) do{VkResult r_=(x); if(r_){fprintf(stderr,"%s = %d\n",#x,r_); exit(1);}}while(0)
int main(int argc,char**argv){
  const char* spv=argv[1]; uint32_t groups=atoi(argv[2]); int reps=atoi(argv[3]); double units=argc>4?atof(argv[4]):0;
  VkApplicationInfo ai{VK_STRUCTURE_TYPE_APPLICATION_INFO}; ai.apiVersion=VK_API_VERSION_1_2;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO}; ici.pApplicationInfo=&ai;
  VkInstance inst; CK(vkCreateInstance(&ici,0,&inst));
  uint32_t n=1; VkPhysicalDevice pd; vkEnumeratePhysicalDevices(inst,&n,&pd);
  float pr=1; VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO}; q.queueCount=1; q.pQueuePriorities=&pr;
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES}; f12.bufferDeviceAddress=1;
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2}; f2.pNext=&f12; f2.features.shaderInt64=1;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO}; dci.pNext=&f2; dci.queueCreateInfoCount=1; dci.pQueueCreateInfos=&q;
  VkDevice dev; CK(vkCreateDevice(pd,&dci,0,&dev)); VkQueue queue; vkGetDeviceQueue(dev,0,0,&queue);
  size_t bytes=256<<20;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO}; bci.size=bytes; bci.usage=VK_BUFFER_USAGE_STORAGE_BUFFER_BIT|VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
  VkBuffer buf; CK(vkCreateBuffer(dev,&bci,0,&buf)); VkMemoryRequirements mr; vkGetBufferMemoryRequirements(dev,buf,&mr);
  VkMemoryAllocateFlagsInfo mf{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO}; mf.flags=VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO}; mai.pNext=&mf; mai.allocationSize=mr.size; mai.memoryTypeIndex=0;
  VkDeviceMemory mem; CK(vkAllocateMemory(dev,&mai,0,&mem)); CK(vkBindBufferMemory(dev,buf,mem,0));
  float* hp; CK(vkMapMemory(dev,mem,0,bytes,0,(void**)&hp)); for(size_t i=0;i<bytes/4;i++) hp[i]=(float)((i*7919)%1000)/1000.f;
  VkBufferDeviceAddressInfo bai{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO}; bai.buffer=buf; uint64_t addr=vkGetBufferDeviceAddress(dev,&bai);
  FILE* fp=fopen(spv,"rb"); std::vector<char> code(1<<22); size_t len=fread(code.data(),1,code.size(),fp); fclose(fp);
  VkShaderModuleCreateInfo smci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO}; smci.codeSize=len; smci.pCode=(uint32_t*)code.data();
  VkShaderModule sm; CK(vkCreateShaderModule(dev,&smci,0,&sm));
  VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT,0,16};
  VkPipelineLayoutCreateInfo plci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO}; plci.pushConstantRangeCount=1; plci.pPushConstantRanges=&pcr;
  VkPipelineLayout pl; CK(vkCreatePipelineLayout(dev,&plci,0,&pl));
  VkComputePipelineCreateInfo cpci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO}; cpci.stage={VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,0,0,VK_SHADER_STAGE_COMPUTE_BIT,sm,"main",0}; cpci.layout=pl;
  VkPipeline pipe; CK(vkCreateComputePipelines(dev,0,1,&cpci,0,&pipe));
  VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO}; VkCommandPool pool; CK(vkCreateCommandPool(dev,&cpi,0,&pool));
  VkCommandBufferAllocateInfo cbai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO}; cbai.commandPool=pool; cbai.commandBufferCount=1; VkCommandBuffer cb; CK(vkAllocateCommandBuffers(dev,&cbai,&cb));
  VkCommandBufferBeginInfo cbbi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO}; CK(vkBeginCommandBuffer(cb,&cbbi));
  struct{uint64_t a; uint32_t n, pad;} push{addr,(uint32_t)(argc>5?atoi(argv[5]):1024),0};
  vkCmdBindPipeline(cb,VK_PIPELINE_BIND_POINT_COMPUTE,pipe); vkCmdPushConstants(cb,pl,VK_SHADER_STAGE_COMPUTE_BIT,0,16,&push);
  vkCmdDispatch(cb,groups,1,1); CK(vkEndCommandBuffer(cb));
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO}; si.commandBufferCount=1; si.pCommandBuffers=&cb;
  CK(vkQueueSubmit(queue,1,&si,0)); vkQueueWaitIdle(queue);
  double best=1e9, bestc=1e9;
  for(int r=0;r<reps;r++){ auto t0=std::chrono::steady_clock::now(); clock_t c0=clock();
    CK(vkQueueSubmit(queue,1,&si,0)); vkQueueWaitIdle(queue);
    double t=std::chrono::duration<double>(std::chrono::steady_clock::now()-t0).count(), c=double(clock()-c0)/CLOCKS_PER_SEC; if(t<best)best=t; if(c<bestc)bestc=c; }
  double total = units * groups;
  printf("%s: %.1f ms wall, %.1f ms cpu: %.3g G units/s wall, %.3g per cpu-second, %.2f ns cpu per unit\n", spv, best * 1e3,
         bestc * 1e3, total / best / 1e9, total / bestc / 1e9, bestc * 1e9 / total);
}
