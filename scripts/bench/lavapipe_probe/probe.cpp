// A bare Vulkan compute harness for probe.sh and ../swiftshader_probe/probe.sh (not part of vela): runs one
// SPIR-V shader over `groups` workgroups `reps` times on the first device (the
// loader's VK_ICD_FILENAMES picks the driver) and prints the best wall and
// process CPU time, and per `unit` (the shader's operations, or flops) the
// rate. Push constants: the 64-bit address of a 256 MiB buffer, n (the
// shader's loop count) and the index masks for the uniform buffer and the
// texel buffers (the largest power of two the device's limits allow, less 1).
// Descriptor set 0 views the same buffer as 0: storage buffer, 1: uniform
// buffer, 2: uniform texel buffer R32_SFLOAT, 3: uniform texel buffer
// R32G32B32A32_SFLOAT, 4: storage texel buffer R32_SFLOAT (ranges from
// maxStorageBufferRange, maxUniformBufferRange, maxTexelBufferElements).
//   probe SPV GROUPS REPS UNITS_PER_GROUP N
#include <vulkan/vulkan.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
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
  VkPhysicalDeviceFeatures have; vkGetPhysicalDeviceFeatures(pd,&have);  // SwiftShader has no shaderInt64
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES}; f12.bufferDeviceAddress=1;
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2}; f2.pNext=&f12; f2.features.shaderInt64=have.shaderInt64;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO}; dci.pNext=&f2; dci.queueCreateInfoCount=1; dci.pQueueCreateInfos=&q;
  VkDevice dev; CK(vkCreateDevice(pd,&dci,0,&dev)); VkQueue queue; vkGetDeviceQueue(dev,0,0,&queue);
  size_t bytes=256<<20;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO}; bci.size=bytes; bci.usage=VK_BUFFER_USAGE_STORAGE_BUFFER_BIT|VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT|VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT|
    VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT|VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT;
  VkBuffer buf; CK(vkCreateBuffer(dev,&bci,0,&buf)); VkMemoryRequirements mr; vkGetBufferMemoryRequirements(dev,buf,&mr);
  VkMemoryAllocateFlagsInfo mf{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO}; mf.flags=VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO}; mai.pNext=&mf; mai.allocationSize=mr.size; mai.memoryTypeIndex=0;
  VkDeviceMemory mem; CK(vkAllocateMemory(dev,&mai,0,&mem)); CK(vkBindBufferMemory(dev,buf,mem,0));
  float* hp; CK(vkMapMemory(dev,mem,0,bytes,0,(void**)&hp)); for(size_t i=0;i<bytes/4;i++) hp[i]=(float)((i*7919)%1000)/1000.f;
  VkBufferDeviceAddressInfo bai{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO}; bai.buffer=buf; uint64_t addr=vkGetBufferDeviceAddress(dev,&bai);
  FILE* fp=fopen(spv,"rb"); std::vector<char> code(1<<22); size_t len=fread(code.data(),1,code.size(),fp); fclose(fp);
  VkShaderModuleCreateInfo smci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO}; smci.codeSize=len; smci.pCode=(uint32_t*)code.data();
  VkShaderModule sm; CK(vkCreateShaderModule(dev,&smci,0,&sm));
  VkPhysicalDeviceProperties props; vkGetPhysicalDeviceProperties(pd,&props); const VkPhysicalDeviceLimits& lim=props.limits;
  auto pow2=[](uint64_t x){ uint64_t p=1; while(p*2<=x) p*=2; return p; };
  uint64_t ssbo=std::min<uint64_t>(bytes,lim.maxStorageBufferRange), ubo=std::min<uint64_t>(bytes,lim.maxUniformBufferRange);
  uint64_t t1=std::min<uint64_t>(bytes/4,lim.maxTexelBufferElements), t4=std::min<uint64_t>(bytes/16,lim.maxTexelBufferElements);
  uint32_t umask=uint32_t(pow2(ubo/16)-1), tmask=uint32_t(pow2(std::min(t1,t4*4))-1);  // ubo in vec4s; texel index in floats
  if(getenv("PROBE_LIMITS")) fprintf(stderr,"limits: maxUniformBufferRange %u, maxTexelBufferElements %u, maxStorageBufferRange %u\n",
          lim.maxUniformBufferRange,lim.maxTexelBufferElements,lim.maxStorageBufferRange);
  VkDescriptorType types[5]={VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
                             VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER};
  VkDescriptorSetLayoutBinding lb[5]; for(int i=0;i<5;i++) lb[i]={uint32_t(i),types[i],1,VK_SHADER_STAGE_COMPUTE_BIT,0};
  VkDescriptorSetLayoutCreateInfo dlci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO}; dlci.bindingCount=5; dlci.pBindings=lb;
  VkDescriptorSetLayout dsl; CK(vkCreateDescriptorSetLayout(dev,&dlci,0,&dsl));
  VkDescriptorPoolSize ps[4]={{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,1},{VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,1},{VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,2},
                              {VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER,1}};
  VkDescriptorPoolCreateInfo dpci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO}; dpci.maxSets=1; dpci.poolSizeCount=4; dpci.pPoolSizes=ps;
  VkDescriptorPool dp; CK(vkCreateDescriptorPool(dev,&dpci,0,&dp));
  VkDescriptorSetAllocateInfo dsai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO}; dsai.descriptorPool=dp; dsai.descriptorSetCount=1; dsai.pSetLayouts=&dsl;
  VkDescriptorSet ds; CK(vkAllocateDescriptorSets(dev,&dsai,&ds));
  VkFormat fmts[3]={VK_FORMAT_R32_SFLOAT,VK_FORMAT_R32G32B32A32_SFLOAT,VK_FORMAT_R32_SFLOAT}; uint64_t ranges[3]={t1*4,t4*16,t1*4};
  VkBufferView views[3];
  for(int i=0;i<3;i++){ VkBufferViewCreateInfo bv{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO}; bv.buffer=buf; bv.format=fmts[i]; bv.range=ranges[i];
    CK(vkCreateBufferView(dev,&bv,0,&views[i])); }
  VkDescriptorBufferInfo dbi[2]={{buf,0,ssbo},{buf,0,ubo}};
  VkWriteDescriptorSet w[5]; for(int i=0;i<5;i++){ w[i]={VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET}; w[i].dstSet=ds; w[i].dstBinding=i; w[i].descriptorCount=1;
    w[i].descriptorType=types[i]; if(i<2) w[i].pBufferInfo=&dbi[i]; else w[i].pTexelBufferView=&views[i-2]; }
  vkUpdateDescriptorSets(dev,5,w,0,0);
  VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT,0,24};
  VkPipelineLayoutCreateInfo plci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO}; plci.pushConstantRangeCount=1; plci.pPushConstantRanges=&pcr;
  plci.setLayoutCount=1; plci.pSetLayouts=&dsl;
  VkPipelineLayout pl; CK(vkCreatePipelineLayout(dev,&plci,0,&pl));
  VkComputePipelineCreateInfo cpci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO}; cpci.stage={VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,0,0,VK_SHADER_STAGE_COMPUTE_BIT,sm,"main",0}; cpci.layout=pl;
  VkPipeline pipe; CK(vkCreateComputePipelines(dev,0,1,&cpci,0,&pipe));
  VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO}; VkCommandPool pool; CK(vkCreateCommandPool(dev,&cpi,0,&pool));
  VkCommandBufferAllocateInfo cbai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO}; cbai.commandPool=pool; cbai.commandBufferCount=1; VkCommandBuffer cb; CK(vkAllocateCommandBuffers(dev,&cbai,&cb));
  VkCommandBufferBeginInfo cbbi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO}; CK(vkBeginCommandBuffer(cb,&cbbi));
  struct{uint64_t a; uint32_t n, umask, tmask, pad;} push{addr,(uint32_t)(argc>5?atoi(argv[5]):1024),umask,tmask,0};
  vkCmdBindPipeline(cb,VK_PIPELINE_BIND_POINT_COMPUTE,pipe); vkCmdPushConstants(cb,pl,VK_SHADER_STAGE_COMPUTE_BIT,0,24,&push);
  vkCmdBindDescriptorSets(cb,VK_PIPELINE_BIND_POINT_COMPUTE,pl,0,1,&ds,0,0);
  vkCmdDispatch(cb,groups,1,1); CK(vkEndCommandBuffer(cb));
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO}; si.commandBufferCount=1; si.pCommandBuffers=&cb;
  CK(vkQueueSubmit(queue,1,&si,0)); vkQueueWaitIdle(queue);
  auto threads=[]{ FILE* f=fopen("/proc/self/status","r"); char line[256]; int t=0;
    while(f&&fgets(line,sizeof line,f)) if(!strncmp(line,"Threads:",8)) t=atoi(line+8); if(f) fclose(f); return t; };
  if(getenv("PROBE_THREADS")) fprintf(stderr,"threads in the process after the first dispatch: %d\n",threads());
  double best=1e9, bestc=1e9;
  for(int r=0;r<reps;r++){ auto t0=std::chrono::steady_clock::now(); clock_t c0=clock();
    CK(vkQueueSubmit(queue,1,&si,0)); vkQueueWaitIdle(queue);
    double t=std::chrono::duration<double>(std::chrono::steady_clock::now()-t0).count(), c=double(clock()-c0)/CLOCKS_PER_SEC; if(t<best)best=t; if(c<bestc)bestc=c; }
  double total = units * groups;
  printf("%s: %.1f ms wall, %.1f ms cpu: %.3g G units/s wall, %.3g per cpu-second, %.2f ns cpu per unit\n", spv, best * 1e3,
         bestc * 1e3, total / best / 1e9, total / bestc / 1e9, bestc * 1e9 / total);
}
